"""Blocking calls from the event loop: the metadata store's calls wait for ZooKeeper, so the
cluster's code on the loop runs them in the loop's default executor."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def run_blocking(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` in the running loop's default executor."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(call, *args))
