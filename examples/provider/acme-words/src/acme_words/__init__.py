"""acme_words: an example llama-stack safety provider packaged for llama-stack-operator."""

from .config import AcmeWordsConfig


async def get_adapter_impl(config: AcmeWordsConfig, deps):
    from .impl import AcmeWordsSafety

    impl = AcmeWordsSafety(config)
    await impl.initialize()
    return impl
