"""Where the server may send a request: the URLs a catalog definition names (tokenUrl, revokeUrl,
authorizeUrl, baseUrl and the probe made of it).

A definition is written by an admin, and a probe URL may be filled from a member's own fields
(`{instanceUrl}`); neither may aim the server at cloud metadata, which answers instance
credentials to whoever can reach it. Refused: link-local ranges (169.254.0.0/16, fe80::/10, and
the same addresses spelled as IPv4-mapped, 6to4, Teredo or NAT64 IPv6), the metadata addresses of
the large clouds (169.254.169.254, fd00:ec2::254, 100.100.100.200, 168.63.129.16, 192.0.0.192),
their metadata host names, and addresses that name no single host (0.0.0.0, ::, multicast,
broadcast). Loopback stays allowed for development; private ranges stay allowed for
self-hosted services.

Two checks, one rule:
- `import_refusal(url)` at import: a literal address in any spelling the resolver accepts
  ("2852039166", "0xa9fea9fe", "0251.0376.0251.0376" are all 169.254.169.254) and the
  metadata names. No DNS query: an import never waits on the network.
- `pin(url)` just before each call: the name is resolved, every address it answers is checked,
  and the request goes to the checked address (Host header and TLS name kept), so a name that
  resolves somewhere else a moment later (DNS rebinding) cannot redirect it.
"""
from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from workspacectl.errors import ApiError

BLOCKED_NETWORKS = tuple(ipaddress.ip_network(n) for n in (
    "169.254.0.0/16",        # IPv4 link-local: AWS, GCP, Azure, OpenStack, DigitalOcean metadata
    "fe80::/10",             # IPv6 link-local
    "fd00:ec2::254/128",     # AWS metadata over IPv6
    "100.100.100.200/32",    # Alibaba Cloud metadata
    "168.63.129.16/32",      # Azure WireServer
    "192.0.0.192/32",        # Oracle Cloud metadata
    "0.0.0.0/8", "::/128",   # "this host": reaches local services without saying so
    "224.0.0.0/4", "ff00::/8", "255.255.255.255/32",
))
BLOCKED_HOSTS = frozenset({
    "metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal",
    "metadata.tencentyun.com", "metadata.platformequinix.com", "metadata.packet.net",
})
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class BlockedAddress(ApiError):
    """A URL the server must not call. 409: the catalog (or a field) is wrong, not the provider;
    nothing was sent."""

    def __init__(self, message: str):
        super().__init__("conflict", message)


def _embedded_v4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    out = [a for a in (ip.ipv4_mapped, ip.sixtofour) if a is not None]
    if ip.teredo:
        out.extend(ip.teredo)
    if ip in NAT64:
        out.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return out


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def address_refusal(ip: IPAddress) -> str | None:
    """Why the server may not connect to this address, or None."""
    if isinstance(ip, ipaddress.IPv6Address):
        ip = ipaddress.IPv6Address(ip.compressed.split("%")[0])  # a zone id changes nothing here
        for inner in _embedded_v4(ip):
            why = address_refusal(inner)
            if why:
                return why
    if ip.is_loopback:
        return None
    if any(ip in net for net in BLOCKED_NETWORKS if net.version == ip.version):
        return f"{ip} is a link-local, cloud metadata or non-host address"
    if ip.is_link_local:
        return f"{ip} is a link-local address"
    return None


def _host(url: str) -> tuple[str, int] | None:
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not host:
        return None
    return host, port or (443 if parts.scheme == "https" else 80)


def _literal(host: str) -> IPAddress | None:
    """The address a host spells without DNS, in any form getaddrinfo accepts; None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError, ValueError):
        return None
    return ipaddress.ip_address(infos[0][4][0]) if infos else None


def host_refusal(host: str) -> str | None:
    name = host.lower().rstrip(".")
    if name in BLOCKED_HOSTS:
        return f"{host} is a cloud metadata host"
    ip = _literal(host)
    return address_refusal(ip) if ip is not None else None


def import_refusal(url: str) -> str | None:
    """Why a definition may not name this URL (no DNS query), or None. A URL whose host is a
    `{field}` placeholder is checked when it is called."""
    target = _host(url)
    if target is None:
        return None  # not http(s): the caller's own syntax check says so
    return host_refusal(target[0])


@dataclass(repr=False)
class Pinned:
    """A request target with the name already resolved and checked."""
    url: str
    headers: dict = field(default_factory=dict)
    extensions: dict = field(default_factory=dict)


def _refused(what: str, url_host: str, why: str) -> BlockedAddress:
    return BlockedAddress(f"Refused to call {what} at {url_host[:100]}: {why}. Nothing was sent; an owner or "
                          "admin fixes the URL with `wsctl catalog import`.")


def resolve_checked(url: str, what: str, *, required: bool = True) -> tuple[str, int, str | None]:
    """(host, port, the address to connect to) after resolving the name and checking every answer.

    required=False (a URL the member's browser opens, not the server): a name this server cannot
    resolve is let through with address None; one it resolves is still checked."""
    target = _host(url)
    if target is None:
        raise BlockedAddress(f"Refused to call {what}: it is not an http(s) URL. Nothing was sent.")
    host, port = target
    why = host_refusal(host)
    if why:
        raise _refused(what, host, why)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, ValueError):
        if not required:
            return host, port, None
        raise ApiError("upstream_failed", f"Could not resolve {host[:100]} for {what}; check the name, "
                       "or try again shortly.") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))   # str already: an IP address
    for address in addresses:
        why = address_refusal(ipaddress.ip_address(address))
        if why:
            raise _refused(what, host, f"it resolves to {why}")
    if not addresses:
        raise ApiError("upstream_failed", f"Could not resolve {host[:100]} for {what}; try again shortly.")
    return host, port, addresses[0]


def pin(url: str, what: str) -> Pinned:
    """The URL rewritten to the checked address, with the Host header and TLS server name of the
    original, for one httpx request."""
    host, port, address = resolve_checked(url, what)
    assert address is not None
    parts = urlsplit(url)
    literal = f"[{address}]" if ":" in address else address
    netloc = literal if parts.port is None else f"{literal}:{port}"
    pinned = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    host_header = host if parts.port is None else f"{host}:{port}"
    if ":" in host and not host.startswith("["):
        host_header = f"[{host}]" if parts.port is None else f"[{host}]:{port}"
    extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
    return Pinned(pinned, {"Host": host_header}, extensions)
