"""The live provider for one model of a suite: its protocol, endpoint, key and run settings."""

from __future__ import annotations

import os
from typing import Any

from evalspec.providers.base import Provider
from evalspec.providers.tool_names import WireToolNames
from evalspec.suite.model import ModelSpec, RunSettings


def live_provider(model: ModelSpec, run: RunSettings, limiter: Any = None) -> Provider:
    """A provider calling the model's endpoint, sending provider-safe tool names."""
    if model.provider == "anthropic":
        from evalspec.providers.anthropic_messages import AnthropicMessagesProvider as cls

        base_url = model.base_url or os.environ.get("ANTHROPIC_BASE_URL")
    else:
        from evalspec.providers.openai_chat import OpenAIChatProvider as cls

        base_url = model.base_url or os.environ.get("OPENAI_BASE_URL")
    inner = cls(
        base_url=base_url,
        api_key_env=model.api_key_env,
        headers=model.headers,
        timeout_s=run.timeout_s,
        retries=run.retries,
        requests_per_minute=run.requests_per_minute,
        limiter=limiter,
    )
    return WireToolNames(inner)
