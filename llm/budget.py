"""Rate limits that hold across every worker: an endpoint's requests and tokens per minute are
one budget shared in Redis (a rolling 60-second log per endpoint, checked and written by one Lua
script, so two workers never both take the last request of a minute). Without Redis (the
embedded default: one process, tasks in-process) the same rule runs in-process.

Contract: :func:`acquire` returns 0.0 when the request may go now (and counts it), or how many
seconds to wait before asking again (nothing counted). Tokens are reserved at the estimate
given (the prompt's characters / 4 plus the answer's ``max_tokens``): the true count is known
only afterwards, and the estimate errs on the safe side.

Written by hand because no installed library offers a shared rolling-window limit of requests
and tokens together; the log is exact where a token bucket would allow a double burst.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from functools import lru_cache
from typing import Any

from django.conf import settings

WINDOW = 60.0

_SCRIPT = """
local key = KEYS[1]
local rpm = tonumber(ARGV[1])
local tpm = tonumber(ARGV[2])
local tokens = tonumber(ARGV[3])
local member = ARGV[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - 60)
local entries = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
local count = #entries / 2
if rpm > 0 and count + 1 > rpm then
  return tostring(tonumber(entries[2]) + 60 - now)
end
if tpm > 0 then
  local used = 0
  for i = 1, #entries, 2 do
    used = used + tonumber(string.match(entries[i], ':(%d+)$'))
  end
  if count > 0 and used + tokens > tpm then
    local freed = used
    for i = 1, #entries, 2 do
      freed = freed - tonumber(string.match(entries[i], ':(%d+)$'))
      if freed + tokens <= tpm then
        return tostring(tonumber(entries[i + 1]) + 60 - now)
      end
    end
  end
end
redis.call('ZADD', key, now, member .. ':' .. tokens)
redis.call('EXPIRE', key, 61)
return '0'
"""


def redis_url() -> str | None:
    """The Redis the budget lives in: LLM_REDIS_URL, else the Celery broker when it is Redis."""
    url = str(settings.LLM_REDIS_URL or settings.CELERY_BROKER_URL or "")
    return url if url.startswith(("redis://", "rediss://", "unix://")) else None


@lru_cache(maxsize=4)
def _script(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url).register_script(_SCRIPT)


_local_lock = threading.Lock()
_local: dict[str, deque[tuple[float, int]]] = {}


def _acquire_locally(key: str, rpm: int, tpm: int, tokens: int) -> float:
    with _local_lock:
        log = _local.setdefault(key, deque())
        now = time.monotonic()
        while log and log[0][0] <= now - WINDOW:
            log.popleft()
        if rpm and len(log) + 1 > rpm:
            return log[0][0] + WINDOW - now
        if tpm and log:
            used = sum(n for _, n in log)
            if used + tokens > tpm:
                for at, n in log:
                    used -= n
                    if used + tokens <= tpm:
                        return at + WINDOW - now
        log.append((now, tokens))
        return 0.0


def acquire(endpoint_name: str, *, rpm: int, tpm: int, tokens: int) -> float:
    """Count one request of ``tokens`` against the endpoint's budget, or say how long to wait."""
    if not rpm and not tpm:
        return 0.0
    if tpm:
        tokens = min(tokens, tpm)  # a request larger than the whole budget waits for all of it
    key = f"rungwise:llm:budget:{endpoint_name}"
    url = redis_url()
    if url is None:
        return _acquire_locally(key, rpm, tpm, tokens)
    wait = _script(url)(keys=[key], args=[rpm, tpm, max(tokens, 0), uuid.uuid4().hex])
    return max(float(wait), 0.0)


def wait_for_budget(endpoint_name: str, *, rpm: int, tpm: int, tokens: int) -> float:
    """Block until the budget allows the request; returns the seconds waited."""
    waited = 0.0
    while (pause := acquire(endpoint_name, rpm=rpm, tpm=tpm, tokens=tokens)) > 0:
        pause = min(pause + 0.01, WINDOW)
        time.sleep(pause)
        waited += pause
    return waited
