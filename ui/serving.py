"""How this server talks to the browser: no delayed small writes."""

from __future__ import annotations

import os
import socket
import stat
import threading

import streamlit as st

_NO_DELAY = threading.Event()


def no_delay() -> None:
    """Turn Nagle's algorithm off (TCP_NODELAY) on this server's listening socket and its open connections, once.

    Streamlit's server binds its own socket with protocol number 0, and asyncio only disables Nagle on
    sockets that say IPPROTO_TCP. So each response body, written after its headers, waits for the
    browser's delayed ACK: 40 ms for every script, font and message on a reused connection. A first
    visit fetches about 150 scripts over six connections: a second or more of waiting. Connections
    accepted later inherit the option from the listening socket; the ones already open (the first
    visit's own, its websocket) are set here too. Nothing to do where /dev/fd is missing (Windows).
    """
    if _NO_DELAY.is_set():
        return
    _NO_DELAY.set()
    port = st.get_option("server.port")
    try:
        descriptors = [int(name) for name in os.listdir("/dev/fd")]
    except OSError:
        return
    for fd in descriptors:
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            with socket.socket(fileno=os.dup(fd)) as sock:  # a duplicate: closing it leaves the server's open
                if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM \
                        and sock.getsockname()[1] == port:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # closed meanwhile, or not a TCP socket
            continue
