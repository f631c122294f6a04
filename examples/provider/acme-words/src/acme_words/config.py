from pydantic import BaseModel, Field


class AcmeWordsConfig(BaseModel):
    """Words whose presence in a message is a violation."""

    blocked_words: list[str] = Field(default_factory=list)
