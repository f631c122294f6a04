#!/usr/bin/env python3
"""Exports the llama-stack data the operator embeds, from an installed llama-stack (or OGX).

  python llama_stack_data.py export OUT_DIR     # inside a venv with llama-stack installed
      writes OUT_DIR/configs/<distribution>/config.yaml and OUT_DIR/providers.json
  python llama_stack_data.py export-ogx OUT_DIR # inside a venv with ogx (llama-stack's new name)
      writes OUT_DIR/configs-ogx/<distribution>/config.yaml for the distributions OGX publishes
      images of (OGX_DISTRIBUTIONS)
  python llama_stack_data.py table-ogx OUT_FILE   # inside a venv running one OGX release
      writes that release's provider table: the format of providers.json, with "server": "ogx"
      next to the version (still under the key llamaStackVersion)
  python llama_stack_data.py group-ogx-tables OUT_DIR TABLE.json ...  # any Python
      writes OUT_DIR/<first>.json for each run of consecutive releases (oldest first) whose tables
      are the same but for the version: the table of the run's first release, with "releases"
      naming every release of the run; removes the other files of OUT_DIR
  python llama_stack_data.py table REGISTRY.json VERSION
      prints providers.json derived from a registry dump (the format `export` dumps too)

providers.json maps API -> provider_type -> {kind, urlField, secretField, hostPort, configKeys}.
Field names come from each provider's config schema (by alias, as the server parses YAML), by a
fixed preference order, never by guessing per provider:
  urlField:    the first of base_url, url, uri, orchestrator_url present
  secretField: the first of api_token, api_key, access_token, token, password present; else
               the field that also accepts `api_key` (a pydantic validation alias, as
               bedrock's aws_bedrock_bearer_token in OGX 1.x)
  hostPort:    true when the schema has host and port but no URL field (e.g. pgvector)
  requiredKeys: the schema's required properties (the server refuses the provider without them)
  apiDependencies: APIs the provider needs served (it fails to start without them)
"""

import importlib
import json
import shutil
import sys
from pathlib import Path

URL_FIELDS = ["base_url", "url", "uri", "orchestrator_url"]
SECRET_FIELDS = ["api_token", "api_key", "access_token", "token", "password"]
# The only distributions ogx-ai/ogx publishes as images (docker.io/ogxai/distribution-<name>).
OGX_DISTRIBUTIONS = ["postgres-demo", "starter"]


def derive(entry):
    schema = entry.get("config_schema") or {}
    keys = sorted(schema.get("properties", {}).keys())
    url = next((k for k in URL_FIELDS if k in keys), None)
    secret = next((k for k in SECRET_FIELDS if k in keys), None) or entry.get("api_key_alias_of")
    out = {"configKeys": keys}
    if url:
        out["urlField"] = url
    if secret:
        out["secretField"] = secret
    if not url and "host" in keys and "port" in keys:
        out["hostPort"] = True
    if schema.get("required"):
        out["requiredKeys"] = sorted(schema["required"])
    if entry.get("api_dependencies"):
        out["apiDependencies"] = sorted(entry["api_dependencies"])
    return out


def table(registry, version, server=None):
    providers = {}
    for api in sorted(registry):
        providers[api] = {}
        for provider_type in sorted(registry[api]):
            entry = registry[api][provider_type]
            row = {"kind": provider_type.split("::", 1)[0]}
            row.update(derive(entry))
            if entry.get("deprecation_error"):
                row["deprecationError"] = entry["deprecation_error"]
            elif entry.get("deprecation_warning"):
                row["deprecationWarning"] = entry["deprecation_warning"]
            providers[api][provider_type] = row
    out = {"llamaStackVersion": version, "providers": providers}
    if server:
        out["server"] = server
    return out


def accepts_api_key(cls):
    """The field (by its alias) that a config under `api_key` sets, when `api_key` is only one
    of its validation aliases; None otherwise."""
    for name, field in cls.model_fields.items():
        alias = field.validation_alias
        choices = getattr(alias, "choices", [alias] if isinstance(alias, str) else [])
        if "api_key" in choices and (field.alias or name) != "api_key":
            return field.alias or name
    return None


def dump_registry(package="llama_stack"):
    # llama_stack and ogx lay the registry out identically; only the top-level module differs.
    get_provider_registry = importlib.import_module(f"{package}.core.distribution").get_provider_registry

    registry = {}
    for api, specs in get_provider_registry().items():
        api_name = getattr(api, "value", str(api))
        registry[api_name] = {}
        for provider_type, spec in specs.items():
            schema = None
            api_key_alias_of = None
            config_class = getattr(spec, "config_class", None)
            if config_class:
                module_name, _, class_name = config_class.rpartition(".")
                try:
                    cls = getattr(importlib.import_module(module_name), class_name)
                    schema = cls.model_json_schema(by_alias=True)
                    api_key_alias_of = accepts_api_key(cls)
                except Exception as e:  # a provider whose optional deps are missing
                    print(f"warning: cannot load {config_class}: {e}", file=sys.stderr)
            registry[api_name][provider_type] = {
                "config_schema": schema,
                "api_key_alias_of": api_key_alias_of,
                "api_dependencies": [getattr(a, "value", str(a)) for a in getattr(spec, "api_dependencies", []) or []],
                "deprecation_warning": getattr(spec, "deprecation_warning", None),
                "deprecation_error": getattr(spec, "deprecation_error", None),
            }
    return registry


def export(out_dir):
    import llama_stack
    from importlib.metadata import version as dist_version

    version = dist_version("llama-stack")
    out = Path(out_dir)
    distributions = Path(llama_stack.__file__).parent / "distributions"
    for config in sorted(distributions.glob("*/config.yaml")):
        target = out / "configs" / config.parent.name / "config.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(config, target)
    registry = dump_registry()
    (out / "providers.json").write_text(json.dumps(table(registry, version), indent=1, sort_keys=True) + "\n")


def export_ogx(out_dir):
    import ogx
    from importlib.metadata import version as dist_version

    version = dist_version("ogx")
    out = Path(out_dir)
    distributions = Path(ogx.__file__).parent / "distributions"
    for name in OGX_DISTRIBUTIONS:
        config = distributions / name / "config.yaml"
        if not config.is_file():
            sys.exit(f"ogx {version} ships no {config}")
        target = out / "configs-ogx" / name / "config.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(config, target)


def table_ogx(out_file):
    from importlib.metadata import version as dist_version

    Path(out_file).write_text(
        json.dumps(table(dump_registry("ogx"), dist_version("ogx"), server="ogx"), indent=1, sort_keys=True) + "\n"
    )


def group_ogx_tables(out_dir, files):
    tables = [json.loads(Path(f).read_text()) for f in files]
    runs = []
    for t in tables:
        providers = t["providers"]
        if runs and runs[-1]["providers"] == providers:
            runs[-1]["releases"].append(t["llamaStackVersion"])
        else:
            runs.append(dict(t, releases=[t["llamaStackVersion"]]))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.json"):
        old.unlink()
    for run in runs:
        (out / f"{run['llamaStackVersion']}.json").write_text(json.dumps(run, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["export"]:
        export(sys.argv[2])
    elif sys.argv[1:2] == ["export-ogx"]:
        export_ogx(sys.argv[2])
    elif sys.argv[1:2] == ["table-ogx"]:
        table_ogx(sys.argv[2])
    elif sys.argv[1:2] == ["group-ogx-tables"]:
        group_ogx_tables(sys.argv[2], sys.argv[3:])
    elif sys.argv[1:2] == ["table"]:
        registry = json.loads(Path(sys.argv[2]).read_text())
        print(json.dumps(table(registry, sys.argv[3]), indent=1, sort_keys=True))
    else:
        sys.exit(__doc__)
