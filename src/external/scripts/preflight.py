"""preflight: checks every external provider with the interpreter and PYTHONPATH the server
will use, before the server starts, and names the real cause of a failure (llama-stack itself
reports any import problem as "get_provider_spec not found"). For each provider: import
`<packageName>.provider`, call get_provider_spec(), pick the spec for the metadata's provider
type, check its API against the CRD section, check the implementation module and config class,
and compare the metadata with the runtime spec (mismatches are warnings; the runtime value is
written into the merged config, so it wins).

Usage: python3 preflight.py <providers-dir> <merged-config.yaml> [<termination-log>]
Written by llama-stack-operator (docs/external-providers.md)."""

import importlib
import json
import pathlib
import sys

from llso_report import fail as report


def fail(stage, headline, detail, resolution, log):
    report(stage, "preflight", headline, detail, resolution, log)


def import_cause(error, module):
    """The first ModuleNotFoundError in the chain, described."""
    seen = error
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError) and seen.name:
            missing = seen.name
            if missing == module or module.startswith(missing + "."):
                return (f"Python package '{module}' is not installed.",
                        "Check spec.packageName in lls-provider-spec.yaml: it must be the top-level import package of "
                        "the provider's wheel (not the PyPI name), and the wheel must contain it.")
            # The other server line's API package: the metadata's spec.serverLine is wrong.
            line_of = {"llama_stack_api": "llama-stack", "llama_stack": "llama-stack", "ogx_api": "ogx", "ogx": "ogx"}
            if missing.split(".")[0] in line_of:
                built_for = line_of[missing.split(".")[0]]
                return (f"'{module}.provider' imports '{missing}', the API package of the {built_for} server line, "
                        "which this distribution image does not run.",
                        f"Use a build of the provider written for this image's server line, and set spec.serverLine "
                        f"in its lls-provider-spec.yaml to the line it is written for ({built_for} for this one).")
            if missing == module + ".provider":
                return (f"Package '{module}' has no 'provider' module; llama-stack imports '{module}.provider' "
                        "and calls its get_provider_spec().",
                        f"Add {module}/provider.py with get_provider_spec() to the provider package.")
            return (f"'{module}.provider' imports '{missing}', which is not installed.",
                    f"Add the wheel that provides '{missing}' to /lls-provider/packages/ in the provider image "
                    "and list it in spec.dependencyWheels.")
        seen = seen.__cause__ or seen.__context__
    return (f"Importing '{module}.provider' failed: {type(error).__name__}: {error}",
            "Fix the provider package so that it imports cleanly with the distribution image's llama-stack.")


def api_name(api):
    return getattr(api, "value", api)


def main():
    root = pathlib.Path(sys.argv[1])
    config_path = pathlib.Path(sys.argv[2])
    log = sys.argv[3] if len(sys.argv) > 3 else "/dev/termination-log"
    stages = sorted(
        (json.loads(p.read_text()) for p in (root / "metadata").glob("*/stage.json")),
        key=lambda s: (s["order"], s["providerId"]),
    )
    runtime_types = {}
    for stage in stages:
        module = stage["packageName"]
        try:
            provider = importlib.import_module(module + ".provider")
        except Exception as error:  # noqa: BLE001 - every import failure is reported
            detail, resolution = import_cause(error, module)
            fail(stage, f"Provider '{stage['providerId']}' cannot be imported", detail, resolution, log)
        get_spec = getattr(provider, "get_provider_spec", None)
        if get_spec is None:
            fail(stage, f"Provider '{stage['providerId']}' has no get_provider_spec()",
                 f"'{module}.provider' does not define get_provider_spec().",
                 f"Define get_provider_spec() in {module}/provider.py, returning the provider's ProviderSpec.", log)
        try:
            specs = get_spec()
        except Exception as error:  # noqa: BLE001
            fail(stage, f"Provider '{stage['providerId']}': get_provider_spec() failed",
                 f"{type(error).__name__}: {error}", "Fix get_provider_spec() in the provider package.", log)
        wanted = stage["providerType"]
        if isinstance(specs, list):
            matching = [s for s in specs if getattr(s, "provider_type", None) == wanted]
            if not matching:
                types = ", ".join(str(getattr(s, "provider_type", "?")) for s in specs)
                fail(stage, f"Provider '{stage['providerId']}': provider type not offered",
                     f"lls-provider-spec.yaml declares providerType {wanted}, but get_provider_spec() returns: {types}",
                     "Set spec.providerType in lls-provider-spec.yaml to one of the returned types.", log)
            spec = matching[0]
        else:
            spec = specs
        runtime_type = str(getattr(spec, "provider_type", wanted))
        runtime_api = str(api_name(getattr(spec, "api", "")))
        section_api = stage["api"]
        if runtime_api != section_api:
            fail(stage, "Provider API type mismatch",
                 f"Provider '{stage['providerId']}' (image: {stage['image']})\n"
                 f"returns api={runtime_api} from get_provider_spec()\nbut is placed under externalProviders.{stage['section']}",
                 f"Move the provider to the externalProviders section of api {runtime_api} in the LLSD spec.", log)
        impl_module = getattr(spec, "module", None) or module
        try:
            impl = importlib.import_module(impl_module)
        except Exception as error:  # noqa: BLE001
            detail, resolution = import_cause(error, impl_module)
            fail(stage, f"Provider '{stage['providerId']}': implementation module cannot be imported", detail, resolution, log)
        entry = "get_provider_impl" if runtime_type.startswith("inline::") else "get_adapter_impl"
        if not hasattr(impl, entry):
            fail(stage, f"Provider '{stage['providerId']}': no {entry}()",
                 f"Module '{impl_module}' does not define {entry}(config, deps), which llama-stack calls to create the provider.",
                 f"Define async {entry}(config, deps) in {impl_module}.", log)
        config_class = getattr(spec, "config_class", None)
        if config_class:
            cls_module, _, cls_name = config_class.rpartition(".")
            try:
                getattr(importlib.import_module(cls_module), cls_name)
            except Exception as error:  # noqa: BLE001
                fail(stage, f"Provider '{stage['providerId']}': config class cannot be loaded",
                     f"config_class {config_class}: {type(error).__name__}: {error}",
                     "Fix config_class in get_provider_spec() or the config module.", log)
        lines = []
        for field, meta, runtime in (("provider_type", wanted, runtime_type), ("api", section_api, runtime_api)):
            lines.append(f"Field: {field}\n  Metadata (lls-provider-spec.yaml): {meta}\n  Runtime (get_provider_spec()): {runtime}\n"
                         + ("  Match \u2713" if meta == runtime else f"  Using: {runtime} (runtime value)"))
        if wanted != runtime_type:
            print("WARNING: Provider metadata mismatch (non-blocking)\n\nProvider: "
                  + stage["providerId"] + "\n\n" + "\n\n".join(lines), flush=True)
            if not isinstance(specs, list):
                runtime_types[stage["providerId"]] = runtime_type
        print(f"{stage['providerId']}: {module} OK ({runtime_type}, api {runtime_api})", flush=True)
    if runtime_types:
        import yaml  # llama-stack depends on PyYAML
        config = yaml.safe_load(config_path.read_text())
        for providers in (config.get("providers") or {}).values():
            for entry in providers or []:
                if entry.get("provider_id") in runtime_types:
                    entry["provider_type"] = runtime_types[entry["provider_id"]]
        config_path.write_text(yaml.safe_dump(config, sort_keys=False))


if __name__ == "__main__":
    main()
