"""The error report of the Python provider steps: printed, and written to the container's
termination message (at most 4096 bytes, keeping the end), which llama-stack-operator copies into
status.externalProviders. Written by llama-stack-operator next to the steps that import it."""

import pathlib
import sys

LIMIT = 4096


def bounded(text):
    if len(text.encode()) <= LIMIT:
        return text
    tail = text[-1024:]
    head = text.encode()[: LIMIT - len(tail.encode()) - 7].decode(errors="ignore")
    return head + "\n[...]\n" + tail


def fail(stage, container, headline, detail, resolution, log):
    """Reports a failure of `stage`'s provider in init container `container` and exits 1."""
    text = (
        f"ERROR: {headline}\n\nProvider: {stage['providerId']}\nImage: {stage['image']}\n"
        f"Init Container: {container}\n\n{detail.rstrip()}\n\nResolution: {resolution}"
    )
    print(text, file=sys.stderr)
    try:
        pathlib.Path(log).write_text(bounded(text))
    except OSError:
        pass
    sys.exit(1)
