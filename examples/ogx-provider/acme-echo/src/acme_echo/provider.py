"""OGX imports `acme_echo.provider` and calls get_provider_spec()."""

from ogx_api import Api, RemoteProviderSpec


def get_provider_spec() -> RemoteProviderSpec:
    return RemoteProviderSpec(
        api=Api.inference,
        adapter_type="acme-echo",
        provider_type="remote::acme-echo",
        module="acme_echo",
        config_class="acme_echo.config.AcmeEchoConfig",
        pip_packages=[],
    )
