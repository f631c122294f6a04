from llama_stack_api import (
    ModerationObject,
    ModerationObjectResults,
    RunShieldResponse,
    SafetyViolation,
    ViolationLevel,
)

from .config import AcmeWordsConfig


def _text(message) -> str:
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    return " ".join(getattr(part, "text", "") for part in content or [])


class AcmeWordsSafety:
    def __init__(self, config: AcmeWordsConfig):
        self.config = config
        self.shields: set[str] = set()

    async def initialize(self) -> None:
        pass

    async def shutdown(self) -> None:
        pass

    async def register_shield(self, shield) -> None:
        self.shields.add(shield.identifier)

    async def unregister_shield(self, identifier: str) -> None:
        self.shields.discard(identifier)

    def _hits(self, text: str) -> list[str]:
        lowered = text.lower()
        return [w for w in self.config.blocked_words if w.lower() in lowered]

    async def run_shield(self, request) -> RunShieldResponse:
        hits = [h for m in request.messages for h in self._hits(_text(m))]
        if not hits:
            return RunShieldResponse(violation=None)
        return RunShieldResponse(
            violation=SafetyViolation(
                violation_level=ViolationLevel.ERROR,
                user_message=f"acme-words blocked: {', '.join(hits)}",
                metadata={"hits": hits},
            )
        )

    async def run_moderation(self, request) -> ModerationObject:
        inputs = request.input if isinstance(request.input, list) else [request.input]
        results = []
        for text in inputs:
            hits = self._hits(text)
            results.append(
                ModerationObjectResults(
                    flagged=bool(hits),
                    categories={w: True for w in hits},
                    category_scores={w: 1.0 for w in hits},
                    user_message=", ".join(hits) or None,
                    metadata={},
                )
            )
        return ModerationObject(id="modr-acme-words", model=request.model or "acme-words", results=results)
