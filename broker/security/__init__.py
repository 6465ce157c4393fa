"""Security of the broker: who a connection is (listeners, TLS, SASL) and what it may do
(ACLs, quotas).

Built so far: the ACL model (:mod:`.acls`) and the authorizer's decisions (:mod:`.authorizer`),
pure and tested; the broker does not consult them yet (issue 22 wires them into the request
path with SASL principals, the ACL admin APIs and their storage).
"""
