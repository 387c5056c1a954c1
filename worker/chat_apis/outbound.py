"""Outbound HTTP for endpoints a spec names, under the admin's policy (docs/spec-confinement.md).

``pin(url)`` checks the URL (``worker.specs.confine.check_url``: scheme, credentials, literal addresses in
every spelling, metadata names, the allow-list), resolves its host once, checks every address it resolved
to (loopback, private, link-local, metadata refused unless the admin opted in and listed the address), and
returns them: ``connection`` then connects to one of those checked addresses and nothing else (the host
name still goes in the Host header and, for https, in SNI and the certificate check), so DNS rebinding
cannot swap the address between the check and the connection. Redirects are never followed (``http.client``
follows none; a 3xx answer is a failure), so no hop escapes the check either.

A refusal happens before any connection and says why the policy refuses (never whether anything answers
there); a connection that fails, for whatever reason (no DNS answer, refused, unreachable, timed out while
connecting, TLS), is one message: ``connection failed``.

The resolver and the socket opener are arguments, so tests stub DNS and forbid connections.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from worker.specs.confine import (
    IPAddress,
    OutboundPolicy,
    Refused,
    Target,
    check_url,
    outbound_policy,
    secret_hosts,
    secret_refusal,
)

Resolver = Callable[[str, int], Sequence[str]]
Opener = Callable[[tuple[str, int], float], socket.socket]

CONNECTION_FAILED = "connection failed"


class OutboundRefused(Exception):
    """The policy refuses the URL or an address its host resolves to; nothing was connected."""


class ConnectFailed(Exception):
    """No connection to an allowed target (one message whatever the cause)."""

    def __str__(self) -> str:
        return CONNECTION_FAILED


def system_resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (TCP), in the resolver's order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def open_tcp(address: tuple[str, int], timeout: float) -> socket.socket:
    return socket.create_connection(address, timeout=timeout)


@dataclass(frozen=True)
class Pinned:
    """A checked target and the checked addresses a connection may use."""

    target: Target
    addresses: tuple[IPAddress, ...]


def pin(url: str, resolve: Resolver = system_resolve, policy: OutboundPolicy | None = None) -> Pinned:
    """Check ``url`` and every address of its host; raises OutboundRefused or ConnectFailed (no answer from
    DNS). Never connects."""
    policy = policy if policy is not None else outbound_policy()
    try:
        target = check_url(url, policy)
    except Refused as exc:
        raise OutboundRefused(str(exc)) from None
    if target.address is not None:
        return Pinned(target, (target.address,))
    try:
        found = list(resolve(target.host, target.port))
    except (OSError, UnicodeError):
        raise ConnectFailed() from None
    if not found:
        raise ConnectFailed()
    addresses: list[IPAddress] = []
    for raw in found:
        try:
            address = ipaddress.ip_address(raw)
        except ValueError:  # a scoped IPv6 address (fe80::1%eth0) or garbage: never connected
            raise OutboundRefused(f"{target.host} resolves to an address that cannot be checked") from None
        why = policy.resolved_refusal(target.host, address)
        if why is not None:
            raise OutboundRefused(f"{target.host} resolves to {why}")
        addresses.append(address)
    return Pinned(target, tuple(addresses))


def key_refused(pinned: Pinned, hosts: tuple[str, ...] | list[str], name: str = "the endpoint's key") -> None:
    """Raises OutboundRefused unless the secret's ``hosts`` (its admin's entries) cover the pinned target:
    its scheme, host, port and path as they will be called and, for an address literal, the very address
    the connection goes to; a host name is covered by name entries only, and ``pin`` has resolved it and
    checked every address against the outbound policy (the connection goes to one of those). Called after
    ``pin`` and before ``connection``: a secret is never sent to a host it is not bound to."""
    try:
        allowed = secret_hosts(list(hosts))
    except Refused as exc:
        raise OutboundRefused(f"{name}: its hosts cannot be read ({exc})") from None
    why = secret_refusal(name, pinned.target, allowed)
    if why is not None:
        raise OutboundRefused(why)


class _PinnedHTTP(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float, opener: Opener) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address, self._opener = address, opener

    def connect(self) -> None:
        self.sock = self._opener((self._address, self.port), self.timeout)  # type: ignore[arg-type]


class _PinnedHTTPS(http.client.HTTPSConnection):
    def __init__(
        self, host: str, port: int, address: str, timeout: float, opener: Opener, context: ssl.SSLContext
    ) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._address, self._opener, self._tls = address, opener, context

    def connect(self) -> None:
        sock = self._opener((self._address, self.port), self.timeout)  # type: ignore[arg-type]
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


def connection(pinned: Pinned, timeout: float, opener: Opener = open_tcp) -> http.client.HTTPConnection:
    """A connected HTTP(S) connection to the first checked address that answers; ConnectFailed if none."""
    target = pinned.target
    for address in pinned.addresses:
        conn: http.client.HTTPConnection
        if target.scheme == "https":
            tls = ssl.create_default_context()
            conn = _PinnedHTTPS(target.host, target.port, str(address), timeout, opener, tls)
        else:
            conn = _PinnedHTTP(target.host, target.port, str(address), timeout, opener)
        try:
            conn.connect()
        except (OSError, ssl.SSLError, ValueError):
            conn.close()
            continue
        return conn
    raise ConnectFailed()
