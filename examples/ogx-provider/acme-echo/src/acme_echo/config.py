from pydantic import BaseModel, Field


class AcmeEchoConfig(BaseModel):
    """The models the provider serves, and what it puts before each answer."""

    models: list[str] = Field(default_factory=lambda: ["echo"])
    prefix: str = "echo: "
