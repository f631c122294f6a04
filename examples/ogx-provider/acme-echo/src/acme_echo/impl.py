import time
import uuid

from ogx_api import (
    InferenceProvider,
    Model,
    ModelType,
    OpenAIChatCompletion,
    OpenAIChatCompletionResponseMessage,
    OpenAIChoice,
)

from .config import AcmeEchoConfig


def _text(message) -> str:
    content = message.get("content") if isinstance(message, dict) else getattr(message, "content", "")
    if isinstance(content, str):
        return content
    parts = content or []
    return " ".join(p.get("text", "") if isinstance(p, dict) else getattr(p, "text", "") for p in parts)


class AcmeEchoInference(InferenceProvider):
    """Answers every chat completion with its prefix and the last user message; what it does not
    serve (completions, embeddings, reranking, reasoning, Anthropic messages) raises
    NotImplementedError, from OGX's own defaults where it has them."""

    def __init__(self, config: AcmeEchoConfig):
        self.config = config
        self.model_store = None

    async def initialize(self) -> None:
        pass

    async def shutdown(self) -> None:
        pass

    async def should_refresh_models(self) -> bool:
        return False

    async def list_models(self) -> list[Model]:
        provider_id = getattr(self, "__provider_id__", "acme-echo")
        return [
            Model(
                identifier=f"{provider_id}/{name}",
                provider_resource_id=name,
                provider_id=provider_id,
                model_type=ModelType.llm,
            )
            for name in self.config.models
        ]

    async def register_model(self, model: Model) -> Model:
        return model

    async def unregister_model(self, model_id: str) -> None:
        pass

    async def openai_chat_completion(self, params) -> OpenAIChatCompletion:
        if getattr(params, "stream", False):
            raise ValueError("acme-echo does not stream")
        users = [m for m in params.messages if (m.get("role") if isinstance(m, dict) else m.role) == "user"]
        answer = self.config.prefix + (_text(users[-1]) if users else "")
        return OpenAIChatCompletion(
            id=f"chatcmpl-{uuid.uuid4().hex}",
            created=int(time.time()),
            model=params.model,
            choices=[
                OpenAIChoice(
                    index=0,
                    finish_reason="stop",
                    message=OpenAIChatCompletionResponseMessage(role="assistant", content=answer),
                )
            ],
        )

    async def openai_completion(self, params):
        raise NotImplementedError("acme-echo serves chat completions only")

    async def openai_embeddings(self, params):
        raise NotImplementedError("acme-echo serves chat completions only")
