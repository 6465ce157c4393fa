"""Security of the broker: who a connection is (listeners, TLS, SASL) and what it may do
(ACLs, quotas).

Built so far, pure and tested, not yet consulted by the broker (issue 22 wires them into
the request path with listeners, the SASL APIs, the ACL and credential admin APIs and their
storage):

- :mod:`.acls`: Kafka's ACL model — bindings, filters, the ZooKeeper form;
- :mod:`.authorizer`: the authorizer's decisions over indexed bindings;
- :mod:`.credentials`: SCRAM credentials (KIP-554) and PLAIN users from JAAS text;
- :mod:`.sasl`: the server side of PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER;
- :mod:`.tls`: a listener's TLS context from Kafka's ``ssl.*`` keys, and a client
  certificate's principal through ``ssl.principal.mapping.rules``.
"""
