"""The cost of one ACL decision (:class:`sluice.broker.security.authorizer.Authorizer`) with
10,000 ACLs bound, beside the same decisions with 100 ACLs — the ones the decisions need —
which the indexes should make nearly equal, and beside a plain dict lookup of the topic name
(the floor: what any per-topic step of a request pays).

    python bench/acl_checks.py [--acls 10000] [--decisions 200000]

The ACLs are a mix like a shared cluster's: per-team PREFIXED topic and group patterns
(``team-<n>-``), LITERAL topics for single services, a few ``*`` and DENY entries; each decision
asks for WRITE or DESCRIBE on a topic of a random team by one of its users. Printed: µs per
decision (best of 5 runs) for each size, and their ratio. The broker consults the authorizer
on every request once ``authorizer.class.name`` is set (one decision per resource per request,
``broker/security/access.py``); what the checks add to whole requests (issue 22's target: ≤ 5 %
at 100 B) is ``bench/acl_overhead.py``'s figure.
"""

from __future__ import annotations

import argparse
import random
import time

from sluice.broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from sluice.broker.security.authorizer import Authorizer

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def bindings(count: int, rng: random.Random) -> list[AclBinding]:
    made = [
        AclBinding(
            ResourcePattern(ResourceType.TOPIC, "*"),
            AccessControlEntry("User:monitor", "*", AclOperation.DESCRIBE, ALLOW),
        )
    ]
    team = 0
    while len(made) < count:
        user = f"User:team-{team}"
        for rtype in (ResourceType.TOPIC, ResourceType.GROUP):
            for op in (AclOperation.READ, AclOperation.WRITE):
                pattern = ResourcePattern(rtype, f"team-{team}-", PatternType.PREFIXED)
                made.append(AclBinding(pattern, AccessControlEntry(user, "*", op, ALLOW)))
        service = ResourcePattern(ResourceType.TOPIC, f"svc-{team}-{rng.randrange(10**6)}")
        made.append(AclBinding(service, AccessControlEntry(user, "*", AclOperation.ALL, ALLOW)))
        if team % 50 == 0:
            secret = ResourcePattern(ResourceType.TOPIC, f"team-{team}-secret")
            made.append(AclBinding(secret, AccessControlEntry(user, "*", AclOperation.ALL, DENY)))
        team += 1
    return made[:count]


def per_decision_us(authorizer: Authorizer, asks: list[tuple[str, AclOperation, str]]) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for principal, op, topic in asks:
            authorizer.authorize(principal, "10.0.0.1", op, ResourceType.TOPIC, topic)
        best = min(best, time.perf_counter() - start)
    return best / len(asks) * 1e6


def lookup_us(asks: list[tuple[str, AclOperation, str]]) -> float:
    table = {topic: object() for _, _, topic in asks}
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _principal, _op, topic in asks:
            table.get(topic)
        best = min(best, time.perf_counter() - start)
    return best / len(asks) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acls", type=int, default=10_000)
    parser.add_argument("--decisions", type=int, default=200_000)
    args = parser.parse_args()
    rng = random.Random(7)
    many = bindings(args.acls, rng)
    teams = 100 // 6  # the teams whose ACLs are among the first 100: both sizes decide alike
    asks = [
        (
            f"User:team-{(t := rng.randrange(teams))}",
            rng.choice((AclOperation.WRITE, AclOperation.DESCRIBE)),
            f"team-{t}-events-{rng.randrange(20)}",
        )
        for _ in range(args.decisions)
    ]
    results = {}
    for size in (100, args.acls):
        authorizer = Authorizer()
        authorizer.add(many[:size] if size < len(many) else many)
        results[size] = per_decision_us(authorizer, asks)
    print(f"{'ACLs':>8}  {'µs per decision':>16}")
    for size, us in results.items():
        print(f"{size:>8}  {us:>16.2f}")
    print(f"{'dict':>8}  {lookup_us(asks):>16.2f}   (a dict lookup of the topic: the floor)")
    print(f"ratio {args.acls} / 100 ACLs: {results[args.acls] / results[100]:.2f}x")


if __name__ == "__main__":
    main()
