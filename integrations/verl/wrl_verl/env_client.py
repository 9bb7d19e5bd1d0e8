"""An asyncio client of ``wrlc env serve``: create an episode for a task, step it with the model's
text, end it and read its score. Busy answers (429) are waited out as the service's Retry-After
says, up to a deadline; any other error raises ``EnvError`` with the service's code and message.

The service's address and token come from the environment (``WRL_ENV_URL``, ``WRL_ENV_TOKEN``),
as every agent-loop worker of a Ray cluster gets them through its runtime env.
"""

from __future__ import annotations

import asyncio
import os
import random
from typing import Any

import aiohttp


class EnvError(RuntimeError):
    """A coded error of the env service (``E0612`` unknown episode, ``E0611`` no token, …)."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(f"{code}: {message} (HTTP {status})")
        self.status, self.code, self.message = status, code, message


class EnvClient:
    def __init__(self, url: str | None = None, token: str | None = None, *, url_var: str = "WRL_ENV_URL",
                 token_var: str = "WRL_ENV_TOKEN", busy_deadline_s: float = 900.0, timeout_s: float = 900.0):
        self.url = (url or os.environ.get(url_var) or "").rstrip("/")
        if not self.url:
            raise EnvError(0, "E0616", f"no env service: set {url_var} to the URL `wrlc env serve` printed")
        self.token = token if token is not None else os.environ.get(token_var, "")
        self.busy_deadline_s = busy_deadline_s
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)

    async def _call(self, method: str, path: str, body: dict | None = None) -> dict[str, Any]:
        headers = {"authorization": f"Bearer {self.token}"} if self.token else {}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.busy_deadline_s
        async with aiohttp.ClientSession(timeout=self.timeout) as session:
            while True:
                async with session.request(method, self.url + path, json=body, headers=headers) as resp:
                    data = await resp.json(content_type=None)
                    if resp.status == 429 and loop.time() < deadline:
                        wait = float(resp.headers.get("retry-after", "1"))
                        await asyncio.sleep(wait * (1.0 + 0.5 * random.random()))
                        continue
                    if resp.status >= 400:
                        err = (data or {}).get("error") or {}
                        raise EnvError(resp.status, err.get("code", "?"), err.get("message", str(data)))
                    return data

    async def describe(self) -> dict[str, Any]:
        return await self._call("GET", "/v1/env")

    async def create(self, task: dict, node: str) -> dict[str, Any]:
        return await self._call("POST", "/v1/episodes", {"task": task, "node": node})

    async def step(self, episode: str, text: str) -> dict[str, Any]:
        return await self._call("POST", f"/v1/episodes/{episode}/step", {"text": text})

    async def end(self, episode: str, reason: str | None = None) -> dict[str, Any]:
        return await self._call("POST", f"/v1/episodes/{episode}/end", {"reason": reason} if reason else {})

    async def get(self, episode: str) -> dict[str, Any]:
        return await self._call("GET", f"/v1/episodes/{episode}")
