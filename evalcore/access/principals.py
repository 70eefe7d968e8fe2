"""Who is acting (a Principal: tenant, role, capability) and what each may do; one rule for every face.

The API builds a Principal from its key, the dashboard from the key it signed in with (or the local
admin of a fresh install); the engine's list, read, launch, edit and delete calls take it, refuse
what it may not do with Forbidden, and hide other tenants' objects as if they did not exist.
"""

from __future__ import annotations

import ipaddress
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

from evalcore.errors import EvalError

ROLES = ("admin", "viewer")
# run_evaluations and full-access both open evaluations; "none" makes a key that authenticates but
# reaches only key introspection (e.g. a monitoring probe), never evaluations nor the dashboard; "send_traces" makes a
# key that an application's OpenTelemetry exporter sends production traces with (POST /v1/traces), and nothing else.
CAPABILITIES = ("run_evaluations", "full-access", "none", "send_traces")
EVALUATION_CAPABILITIES = frozenset({"run_evaluations", "full-access"})
LOCAL_TENANT = "default"
T = TypeVar("T")


class Action(StrEnum):
    """What a principal asks to do; each needs more than the one before."""

    READ = "read"  # list and read campaigns, results, suites, saved targets, comparisons; export
    LABEL = "label"  # label questions for the judges (viewers too when the operator sets EVALCORE_VIEWERS_LABEL=1)
    CHANGE = "change"  # launch, resume, retry, cancel, rename, delete; create, edit, delete suites; upload datasets
    CONFIGURE = "configure"  # save a target configuration: it decides which URLs and files the server uses
    SEND_TRACES = "send_traces"  # store production traces (a send_traces key, or an admin of evaluations)


class Forbidden(EvalError):
    """The principal's role or capability does not allow this action."""


@dataclass(frozen=True)
class Principal:
    """Who acts: the tenant whose objects it sees, its role and its key's capability."""

    tenant: str
    role: str
    capability: str
    key_id: str = ""  # the API key it signed in with ("" for the local admin)

    @property
    def is_local(self) -> bool:
        """Whether this is the local admin (no API key)."""
        return not self.key_id

    def refusal(self, action: Action) -> str | None:
        """Why this principal may not do the action, or None when it may."""
        if action is Action.SEND_TRACES and self.capability == "send_traces":
            return None
        if self.capability == "send_traces":
            return "this key's capability 'send_traces' only sends traces (POST /v1/traces); it reads nothing"
        if self.capability not in EVALUATION_CAPABILITIES:
            return (f"this key's capability {self.capability!r} does not allow evaluation routes "
                    "(needs run_evaluations or full-access)")
        if action is Action.LABEL and self.role != "admin" and not viewers_label():
            return (f"labelling needs an admin key (this key's role is {self.role!r}); the operator lets viewers "
                    "label with EVALCORE_VIEWERS_LABEL=1")
        if action not in (Action.READ, Action.LABEL) and self.role != "admin":
            return f"this action needs an admin key (this key's role is {self.role!r})"
        if action is Action.CONFIGURE and self.capability != "full-access":
            return "this action needs a key with the full-access capability"
        return None

    @property
    def abilities(self) -> str:
        """What this principal may do, in words (a viewer's run_evaluations capability lets it read, not run)."""
        if self.capability == "send_traces":
            return "sends production traces to POST /v1/traces; reads nothing"
        if self.capability not in EVALUATION_CAPABILITIES:
            return "does nothing in evaluations: it only authenticates"
        if self.role != "admin":
            return "reads campaigns, results, suites and comparisons, and exports them; launches and changes nothing"
        if self.capability != "full-access":
            return ("reads, launches, resumes and deletes campaigns, edits suites, uploads datasets; saving or "
                    "changing a target configuration needs full-access")
        return "does everything in its tenant, including saving target configurations"

    def can(self, action: Action) -> bool:
        """Whether this principal may do the action."""
        return self.refusal(action) is None

    def require(self, action: Action) -> None:
        """Forbidden (with the reason) unless this principal may do the action."""
        if (reason := self.refusal(action)) is not None:
            raise Forbidden(reason, where=f"tenant {self.tenant}, role {self.role}")


def viewers_label() -> bool:
    """Whether the operator lets viewers label questions (EVALCORE_VIEWERS_LABEL=1)."""
    return os.environ.get("EVALCORE_VIEWERS_LABEL", "").strip() == "1"


# The CLI and a dashboard with no API key configured act as this one.
LOCAL = Principal(tenant=LOCAL_TENANT, role="admin", capability="full-access")


def scope(principal: Principal | None, tenant: str | None, action: Action = Action.READ) -> str | None:
    """The tenant an engine call is limited to, after checking the principal may do the action.

    Without a principal the caller is the local operator of the database (the CLI, the runner):
    `tenant` limits the call as before, None meaning every tenant. A principal's own tenant wins.
    """
    if principal is None:
        return tenant
    principal.require(action)
    return principal.tenant


def owned(row_tenant: str, tenant: str | None) -> bool:
    """Whether an object of row_tenant is visible to a call limited to tenant (None: every tenant)."""
    return tenant is None or row_tenant == tenant


def is_loopback(address: str | None) -> bool:
    """Whether a server address listens on this machine only (unset or 0.0.0.0 listen on every interface)."""
    if not address:
        return False
    if address.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip().strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


@dataclass
class LoginThrottle:
    """Exponential back-off of failed sign-ins, per session and per client address.

    After n failures in a row under a name, the next attempt under it is checked no sooner than base * 2**(n-1)
    seconds (at most `cap_s`) after the last failure, waiting what is left before the key is even looked at;
    a name with no failure for `forget_s` starts again from zero. Attempts from one address take turns (its
    gate), so parallel sessions each wait the back-off the attempts before them earned. Clock and sleep are
    injectable for tests.
    """

    base_s: float = 0.5
    cap_s: float = 30.0
    forget_s: float = 900.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    _failures: dict[str, tuple[int, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _gates: dict[str, threading.Lock] = field(default_factory=dict)

    def failures(self, name: str) -> int:
        """Recent failures in a row under this name (a session or a client address)."""
        with self._lock:
            count, last = self._failures.get(name, (0, 0.0))
        return count if self.clock() - last < self.forget_s else 0

    def delay(self, *names: str) -> float:
        """The wait left before the next attempt under these names (the worst of them): the back-off counts from the
        last failure, so the time a person takes to type the key again is part of it (a script's retries are not)."""
        now = self.clock()
        with self._lock:
            recent = [self._failures.get(name, (0, 0.0)) for name in names]
        waits = [min(self.cap_s, self.base_s * math.pow(2, count - 1)) - (now - last)
                 for count, last in recent if count and now - last < self.forget_s]
        return max([0.0, *waits])

    def attempt(self, session: str, address: str, check: Callable[[], T | None]) -> T | None:
        """Wait the back-off, then check; None counts a failure under both names, a success clears the session's."""
        with self._lock:
            gate = self._gates.setdefault(address, threading.Lock())
        with gate:  # the address's attempts one after another: each waits what the ones before it earned
            self.sleep(self.delay(session, address))
            result = check()
            self._record(session, address, result is None)
        return result

    def _record(self, session: str, address: str, failed: bool) -> None:
        now = self.clock()
        with self._lock:
            if failed:
                for name in (session, address):
                    count, last = self._failures.get(name, (0, 0.0))
                    self._failures[name] = ((count if now - last < self.forget_s else 0) + 1, now)
            else:
                self._failures.pop(session, None)
