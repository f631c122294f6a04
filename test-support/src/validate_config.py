"""Checks a config.yaml the way the server itself reads it at start-up, without starting it:
the environment substituted (`replace_env_vars`), the whole file parsed by the server's own
`StackConfig`, every name in `apis` one of the server's APIs, each provider's `config`
parsed by the config class its provider spec names (what `instantiate_provider` does), and
every store a provider config names on a backend of `storage.backends` (what the store
factories check when the provider starts). Works for
both lines: the package is `llama_stack` (0.x) or `ogx` (1.x).

Usage: python3 validate_config.py <llama_stack|ogx> <config.yaml> [<config.yaml> ...]
Exit 0 and no output when the server would accept every file; else exit 1 and one line per
problem, each naming its file. Several files share one start of the interpreter and one import of
the server (seconds each).
Written for llama-stack-operator's tests."""

import importlib
import sys

import yaml
from pydantic import BaseModel


def store_references(value, core):
    """The store references (`{backend, namespace}`, `{backend, table_name}`) in a parsed provider
    config, at any depth: each names a storage backend the provider opens at start-up."""
    storage = core("storage.datatypes")
    kinds = (storage.KVStoreReference, storage.SqlStoreReference)
    if isinstance(value, kinds):
        yield value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from store_references(getattr(value, name, None), core)
    elif isinstance(value, dict):
        for item in value.values():
            yield from store_references(item, core)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from store_references(item, core)


def main():
    package, paths = sys.argv[1], sys.argv[2:]
    problems = [problem for path in paths for problem in check(package, path)]
    for problem in problems:
        print(problem)
    sys.exit(1 if problems else 0)


def check(package, path):
    """The problems the server would find in the config at `path`, each naming the file."""
    core = lambda module: importlib.import_module(f"{package}.core.{module}")
    api_type = importlib.import_module(f"{package}_api").Api if package == "ogx" else None
    if api_type is None:
        api_type = importlib.import_module("llama_stack_api").Api
    with open(path) as f:
        raw = yaml.safe_load(f)
    problems = []
    try:
        substituted = core("stack").replace_env_vars(raw)
        config = core("datatypes").StackConfig(**substituted)
    except Exception as e:  # the server stops here with this error
        return [f"{path}: {type(e).__name__}: {e}"]
    known = {api.value for api in api_type}
    for api in raw.get("apis") or []:
        if api not in known:
            problems.append(f"apis: {api!r} is not an API of this server ({', '.join(sorted(known))})")
    registry = core("distribution").get_provider_registry(config)
    instantiate = core("utils.dynamic").instantiate_class_type
    for api, providers in (config.providers or {}).items():
        try:
            specs = registry[api_type(api)]
        except (ValueError, KeyError):
            problems.append(f"providers.{api}: not an API of this server")
            continue
        for provider in providers:
            if provider.provider_id in (None, "", "__disabled__"):
                continue
            spec = specs.get(provider.provider_type)
            if spec is None:
                problems.append(f"providers.{api}.{provider.provider_id}: no provider type {provider.provider_type}")
                continue
            try:
                parsed = instantiate(spec.config_class)(**(provider.config or {}))
            except Exception as e:
                problems.append(f"providers.{api}.{provider.provider_id} ({provider.provider_type}): {type(e).__name__}: {e}")
                continue
            for reference in store_references(parsed, core):
                if reference.backend not in config.storage.backends:
                    # What kvstore_impl/sqlstore_impl raise when the provider starts.
                    problems.append(
                        f"providers.{api}.{provider.provider_id}: unknown backend '{reference.backend}'. "
                        f"Registered backends: {sorted(config.storage.backends)}"
                    )
    return [f"{path}: {problem}" for problem in problems]


if __name__ == "__main__":
    main()
