"""acme_echo: an example OGX inference provider packaged for llama-stack-operator."""

from .config import AcmeEchoConfig


async def get_adapter_impl(config: AcmeEchoConfig, deps):
    from .impl import AcmeEchoInference

    impl = AcmeEchoInference(config)
    await impl.initialize()
    return impl
