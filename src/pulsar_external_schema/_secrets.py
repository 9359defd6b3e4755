"""Secrets stay in the process: what is masked wherever configuration is shown.

A secret is a config value whose key names one (`basic.auth.user.info`, `bearer.auth.token`,
`bearer.auth.client.secret`, `schema.registry.ssl.key.password`, a KMS `secret.access.key` or
`token` given as a rule parameter, ...), or the user-info part of a registry URL
(`https://user:password@host`). Config errors never quote a secret's value; `repr` of a config
shows `****`; and the registry URL's user-info is moved into `basic.auth.user.info` when the
config is built, so the URL that errors, `str(schema)` and httpx's request log show has none.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "****"

#: Any key with one of these in its name holds a secret (ours, confluent-kafka's, KMS params).
_SECRET_KEY = re.compile(
    r"secret|password|token|user\.info|credentials|private\.key|api\.key|auth\.?params", re.IGNORECASE
)


def is_secret(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def shown(key: str, value: Any) -> str:
    """A value as an error may quote it: masked for a secret key."""
    return MASK if is_secret(key) else repr(value)


def masked(conf: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with every secret value masked, URLs without user-info (nested maps too)."""
    out: dict[str, Any] = {}
    for key, value in conf.items():
        if is_secret(str(key)):
            out[key] = MASK
        elif isinstance(value, Mapping):
            out[key] = masked(value)
        elif isinstance(value, str) and "@" in value and "://" in value:
            out[key] = mask_urls(value)
        else:
            out[key] = value
    return out


def split_userinfo(urls: str) -> tuple[str, str | None]:
    """(the comma-separated URLs without user-info, the first URL's `user:password` or None).

    confluent-kafka's client takes the first URL's user-info for every URL; so does this."""
    cleaned: list[str] = []
    userinfo: str | None = None
    for index, url in enumerate(urls.split(",")):
        parts = urlsplit(url.strip())
        if parts.username is None and parts.password is None:
            cleaned.append(url.strip())
            continue
        if index == 0:
            userinfo = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        host = parts.netloc.rpartition("@")[2]
        cleaned.append(urlunsplit(parts._replace(netloc=host)))
    return ",".join(cleaned), userinfo


def mask_urls(text: str) -> str:
    """`scheme://user:password@host` -> `scheme://****@host`, wherever it occurs in `text`."""
    return re.sub(r"(\w+://)[^/@\s,]+@", rf"\g<1>{MASK}@", text)
