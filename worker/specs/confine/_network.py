"""Where a worker may call out (docs/spec-confinement.md, Outbound endpoints): the admin's outbound policy
(``REASONLAB_OUTBOUND_ALLOW``, ``REASONLAB_OUTBOUND_ALLOW_PRIVATE``) and the check of an endpoint URL a
spec names (``EndpointUrl``, ``check_url``): http(s) without credentials, its host a name or address the
admin allows, never a metadata, link-local, unspecified or multicast address in any spelling (decimal
``2130706433``, octal ``0177.0.0.1``, hex ``0x7f.1``, short ``127.1``, IPv6 with an embedded IPv4);
loopback and private addresses only where the admin opted in and listed the address itself.

The same address policy runs again on every address a host resolves to, before the worker connects
(``worker.chat_apis.outbound``).
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator

from worker.specs.confine._fields import Confined
from worker.specs.confine._refusal import CONTROL, Refused, field_error

ALLOW_ENV = "REASONLAB_OUTBOUND_ALLOW"
ALLOW_PRIVATE_ENV = "REASONLAB_OUTBOUND_ALLOW_PRIVATE"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Cloud metadata and similar host services: refused always, whatever the allow-list says.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, ...
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.123",  # AWS time sync
        "168.63.129.16",  # Azure wire server
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS DNS over IPv6
    )
)
METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.com",
        "instance-data",
        "instance-data.ec2.internal",
        "kubernetes.default",
        "kubernetes.default.svc",
    }
)
LOOPBACK_HOSTS = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_IETF_V4 = ipaddress.ip_network("192.0.0.0/24")


@dataclass(frozen=True)
class OutboundPolicy:
    """The admin's allow-list (``REASONLAB_OUTBOUND_ALLOW``, comma-separated): exact host names,
    ``*.domain`` (any name below it, not the domain itself), IP addresses or networks (``203.0.113.7``,
    ``10.1.0.0/16``, ``[::1]``), or ``*`` (any host whose addresses are all public). Empty: no endpoint at
    all. Loopback and private addresses need ``REASONLAB_OUTBOUND_ALLOW_PRIVATE=1`` and the address (or
    network) itself listed; ``*`` never covers them. Metadata, link-local, unspecified, multicast and
    reserved addresses are refused whatever is set. Entries that parse as none of these allow nothing."""

    hosts: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    networks: tuple[IPNetwork, ...] = ()
    any_public: bool = False
    allow_private: bool = False

    @classmethod
    def parse(cls, allow: str, allow_private: bool = False) -> OutboundPolicy:
        hosts: set[str] = set()
        suffixes: list[str] = []
        networks: list[IPNetwork] = []
        any_public = False
        for raw in allow.split(","):
            entry = raw.strip().lower().rstrip(".")
            if not entry:
                continue
            if entry == "*":
                any_public = True
                continue
            if entry.startswith("*."):
                if _valid_hostname(entry[2:]):
                    suffixes.append(entry[1:])
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            if _valid_hostname(entry):
                hosts.add(entry)
        return cls(frozenset(hosts), tuple(suffixes), tuple(networks), any_public, allow_private)

    def listed(self, address: IPAddress) -> bool:
        """The address is inside a network or address the admin listed explicitly."""
        return any(address.version == n.version and address in n for n in self.networks)

    def allows_name(self, host: str) -> bool:
        return host in self.hosts or any(host.endswith(s) for s in self.suffixes) or self.any_public

    def address_refusal(self, address: IPAddress) -> str | None:
        """Why an address (literal or resolved) may not be reached, or None where it may."""
        never = _never(address)
        if never is not None:
            return never
        if not address.is_global or _embedded_not_global(address):
            if self.allow_private and self.listed(address):
                return None
            return "a loopback or private address"
        if self.listed(address) or self.any_public:
            return None
        return "an address not on the admin's outbound allow-list (REASONLAB_OUTBOUND_ALLOW)"

    def resolved_refusal(self, host: str, address: IPAddress) -> str | None:
        """For an address a host name resolved to: public ones are the name's (already allowed), others
        must pass ``address_refusal`` (so a name on the list cannot lead to a private address)."""
        never = _never(address)
        if never is not None:
            return never
        if not address.is_global or _embedded_not_global(address):
            return None if self.allow_private and self.listed(address) else "a loopback or private address"
        return None


def outbound_policy() -> OutboundPolicy:
    """The policy of this process, read from the environment at each call (settings are shared by the API
    and the workers: common/settings.py declares them; this module may not import it)."""
    flag = os.environ.get(ALLOW_PRIVATE_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return OutboundPolicy.parse(os.environ.get(ALLOW_ENV, ""), flag)


def _embedded_v4(address: IPAddress) -> ipaddress.IPv4Address | None:
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if any(address in n for n in _NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _never(address: IPAddress) -> str | None:
    """Refusals no setting lifts: metadata, unspecified, link-local, multicast, reserved; for IPv6, the
    IPv4 address it embeds is held to the same."""
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    inner = _embedded_v4(address)
    if inner is not None and _never(inner) is not None:
        return _never(inner)
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_loopback:
        return None  # a private address: allowed only where the admin opted in and listed it
    if address.is_reserved or (isinstance(address, ipaddress.IPv4Address) and address in _IETF_V4):
        return "a reserved address"
    return None


def _embedded_not_global(address: IPAddress) -> bool:
    inner = _embedded_v4(address)
    return inner is not None and not inner.is_global


_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")
_NUMERIC_PART = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


def _valid_hostname(host: str) -> bool:
    return 0 < len(host) <= 253 and all(_LABEL.match(label) for label in host.split("."))


def parse_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """An IPv4 address in any spelling ``inet_aton`` (and so the resolver) accepts: 1 to 4 parts, each
    decimal, octal (leading 0) or hex (0x), the last filling the remaining bytes (``127.1``,
    ``2130706433``, ``0177.0.0.1``, ``0x7f.1``). None if ``host`` is no such spelling; Refused if it looks
    numeric but is malformed (the resolver might still read it as an address)."""
    parts = host.split(".")
    if not all(_NUMERIC_PART.match(p) for p in parts):
        if _NUMERIC_PART.match(parts[-1]):  # a name whose last label is numeric: no DNS name looks so
            raise Refused(f"{host!r} is neither a host name nor an IPv4 address")
        return None
    if len(parts) > 4:
        raise Refused(f"{host!r} is no IPv4 address")
    values = []
    for p in parts:
        try:
            base = 16 if p.startswith("0x") else 8 if len(p) > 1 and p[0] == "0" else 10
            values.append(int(p[2:] if base == 16 else p, base))
        except ValueError:
            raise Refused(f"{host!r} is no IPv4 address") from None
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        raise Refused(f"{host!r} is no IPv4 address")
    number = 0
    for v in head:
        number = number * 256 + v
    number = number * 256 ** (4 - len(head)) + last
    return ipaddress.IPv4Address(number)


@dataclass(frozen=True)
class Target:
    """A checked endpoint URL: scheme, host (lowercase, no trailing dot), port, the address when the host
    is a literal, and the request path (with its query)."""

    scheme: str
    host: str
    port: int
    address: IPAddress | None
    path: str


def check_url(url: str, policy: OutboundPolicy | None = None) -> Target:
    """The URL's target if the policy lets a worker call it (before any DNS lookup), else Refused."""
    from urllib.parse import urlsplit

    policy = policy if policy is not None else outbound_policy()
    if CONTROL.search(url) or any(c.isspace() for c in url):
        raise Refused("a URL holds no blanks or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise Refused("not a URL: malformed host or port") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise Refused("only http and https URLs are allowed")
    if "@" in parts.netloc:
        raise Refused("a URL carries no user or password (keys are project secrets)")
    raw_host = parts.netloc.rsplit(":", 1)[0] if not parts.netloc.endswith("]") else parts.netloc
    if not parts.hostname:
        raise Refused("the URL names no host")
    if port == 0:
        raise Refused("port 0 is no port")
    port = port or (443 if scheme == "https" else 80)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    if raw_host.startswith("["):
        text = parts.hostname
        if "%" in text:
            raise Refused("an IPv6 address with a zone is refused")
        try:
            address: IPAddress | None = ipaddress.IPv6Address(text)
        except ValueError:
            raise Refused(f"[{text}] is no IPv6 address") from None
        host = text
    else:
        host = parts.hostname.rstrip(".")
        if not host.isascii():
            raise Refused("write an international host name in its ASCII (punycode) form")
        address = parse_ipv4(host)
        if address is None and not _valid_hostname(host):
            raise Refused(f"{host!r} is no valid host name")
    if address is not None:
        why = policy.address_refusal(address)
        if why is not None:
            raise Refused(f"{host} is {why}")
        return Target(scheme, str(address), port, address, path)
    if host in METADATA_HOSTS:
        raise Refused(f"{host} is a cloud metadata host")
    if host in LOOPBACK_HOSTS or host.endswith(".localhost"):
        if not (policy.allow_private and host in policy.hosts):
            raise Refused(f"{host} is a loopback name")
        return Target(scheme, host, port, None, path)
    if not policy.allows_name(host):
        raise Refused(f"{host} is not on the admin's outbound allow-list (REASONLAB_OUTBOUND_ALLOW)")
    return Target(scheme, host, port, None, path)


def _endpoint_url(value: str) -> str:
    try:
        check_url(value)
    except Refused as exc:
        raise field_error("url_refused", exc) from None
    return value


EndpointUrl = Annotated[str, AfterValidator(_endpoint_url), Confined("url")]
"""An http(s) URL a worker may call: on the admin's allow-list, never a metadata, link-local or (without
the admin's opt-in) loopback or private address. Checked again after DNS at connect time."""


# -- where a project secret may be sent -----------------------------------------------------------------
# A project admin sets a secret with the hosts (or URL prefixes) it may be sent to (backend/secrets/); the
# backend refuses a spec that would send it elsewhere (a 422 at its ``*_secret`` field) and the worker
# checks the URL it is about to call, on the checked and pinned target, before it connects
# (``worker.chat_apis.outbound``). The outbound allow-list still applies to every call: a secret's hosts
# narrow where *that secret* goes, they never widen where a worker may connect.

MAX_SECRET_HOSTS = 32


@dataclass(frozen=True)
class SecretHost:
    """One entry of a secret's hosts, parsed:

    - ``api.openai.com``: https URLs to that host (any port, any path);
    - ``*.openai.azure.com``: https URLs to any host below that domain (not the domain itself);
    - ``203.0.113.7``, ``[2001:db8::1]``, ``10.20.0.0/16``: https URLs whose host is an address literal
      inside it;
    - ``https://llm.internal:8443/v1``, ``http://10.0.0.5:8000/``: a URL prefix: that scheme, host and
      port (the scheme's default when none is written), and a path below the prefix's, at a ``/``
      boundary (``/v1`` covers ``/v1`` and ``/v1/chat/completions``, not ``/v1beta``). The only way to
      allow plain http."""

    entry: str
    host: str = ""  # a name (lowercase), empty for an address entry
    suffix: bool = False  # ``*.domain``: below ``host``
    network: IPNetwork | None = None
    scheme: str | None = None  # a URL prefix's (None: https only, any port, any path)
    port: int | None = None
    path: str = "/"

    def covers(self, target: Target) -> bool:
        if self.scheme is None:
            if target.scheme != "https":
                return False
        elif (target.scheme, target.port) != (self.scheme, self.port):
            return False
        if self.network is not None:
            if target.address is None or target.address.version != self.network.version:
                return False
            if target.address not in self.network:
                return False
        elif self.suffix:
            if target.address is not None or not target.host.endswith("." + self.host):
                return False
        elif target.address is not None or target.host != self.host:
            return False
        if self.scheme is None or self.path == "/":
            return True
        prefix = self.path.rstrip("/")
        rest = target.path[len(prefix) :] if target.path.startswith(prefix) else None
        return rest is not None and (rest == "" or rest[0] in "/?")


def parse_secret_host(entry: str) -> SecretHost:
    """A secret's host entry as an admin writes it (``SecretHost``); Refused with why it is none."""
    from urllib.parse import urlsplit

    text = entry.strip()
    if not text:
        raise Refused("an empty host")
    if len(text) > 2000:
        raise Refused("a host of more than 2000 characters")
    if CONTROL.search(text) or any(c.isspace() for c in text):
        raise Refused("a host holds no blanks or control characters")
    if "://" in text:
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise Refused(f"{text!r}: only http and https URL prefixes")
        if "@" in parts.netloc:
            raise Refused(f"{text!r}: a URL prefix carries no user or password")
        if parts.query or parts.fragment or text.endswith(("?", "#")):
            raise Refused(f"{text!r}: a URL prefix has no query or fragment")
        try:
            target = check_url(text, OutboundPolicy(any_public=True, allow_private=True, networks=_EVERY))
        except Refused as exc:
            raise Refused(f"{text!r}: {exc}") from None
        network = ipaddress.ip_network(target.address) if target.address is not None else None
        host = "" if network is not None else target.host
        return SecretHost(text, host, False, network, scheme, target.port, target.path or "/")
    lowered = text.lower().rstrip(".")
    if lowered.startswith("*."):
        if not _valid_hostname(lowered[2:]) or "." not in lowered[2:]:
            raise Refused(f"{text!r}: *. and a domain of at least two labels")
        return SecretHost(text, lowered[2:], True)
    try:
        return SecretHost(text, network=ipaddress.ip_network(lowered.strip("[]"), strict=True))
    except ValueError as exc:
        if "/" in lowered:
            raise Refused(f"{text!r}: not an IP network ({exc})") from None
    try:
        numeric = parse_ipv4(lowered) is not None
    except Refused:
        numeric = True
    if numeric:
        raise Refused(f"{text!r}: write an IPv4 address in its dotted decimal form")
    if not _valid_hostname(lowered):
        raise Refused(
            f"{text!r} is neither a host name, *.domain, an IP address or network, nor a URL prefix"
        )
    return SecretHost(text, lowered)


def secret_hosts(entries: list[str] | tuple[str, ...]) -> tuple[SecretHost, ...]:
    """A secret's entries, parsed; Refused at the first that is none (``entries[i]: why``)."""
    if len(entries) > MAX_SECRET_HOSTS:
        raise Refused(f"at most {MAX_SECRET_HOSTS} hosts a secret")
    return tuple(parse_secret_host(e) for e in entries)


def secret_refusal(name: str, target: Target, hosts: tuple[SecretHost, ...]) -> str | None:
    """Why the secret ``name`` may not be sent to ``target`` (a checked URL; in the worker the pinned one,
    whose address literal, when it has one, is the address the connection goes to), or None where one
    of its hosts covers it."""
    if any(h.covers(target) for h in hosts):
        return None
    where = f"{target.scheme}://{_netloc(target)}{target.path}"
    if not hosts:
        return (
            f"project secret {name!r} may be sent to no host yet: a project admin names its hosts (project "
            f"settings, Secrets), not {where}"
        )
    listed = ", ".join(h.entry for h in hosts)
    return f"project secret {name!r} may be sent only to {listed}, not to {where}"


def _netloc(target: Target) -> str:
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.scheme == "https" else 80
    return host if target.port == default else f"{host}:{target.port}"


# every address, for parsing an entry's URL (the secret's hosts are the admin's, checked against the
# outbound policy only when a worker calls them)
_EVERY: tuple[IPNetwork, ...] = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))
