"""Who sent a request: what the group APIs report about members (client id and host)."""

from __future__ import annotations


class Connection:
    """One client connection, as the handlers see it."""

    __slots__ = ("client_host", "client_id")

    def __init__(self, client_host: str) -> None:
        self.client_host = client_host
        self.client_id: str | None = None
