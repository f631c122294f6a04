"""llama-stack imports `acme_words.provider` and calls get_provider_spec()."""

from llama_stack_api import Api, RemoteProviderSpec


def get_provider_spec() -> RemoteProviderSpec:
    return RemoteProviderSpec(
        api=Api.safety,
        adapter_type="acme-words",
        provider_type="remote::acme-words",
        module="acme_words",
        config_class="acme_words.config.AcmeWordsConfig",
        pip_packages=[],
    )
