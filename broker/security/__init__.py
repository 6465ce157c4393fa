"""Security of the broker: who a connection is (listeners, TLS, SASL) and what it may do
(ACLs, quotas).

- :mod:`.acls`: Kafka's ACL model — bindings, filters, the ZooKeeper form;
- :mod:`.authorizer`: the authorizer's decisions over indexed bindings;
- :mod:`.required_acls`: the one table of what each API needs, and its error codes;
- :mod:`.access`: the checks the handlers make (audited refusals);
- :mod:`.acl_store`: where the ACLs are kept (the data directory, or ZooKeeper);
- :mod:`.audit`: the rate-limited audit log (``sluice.audit``);
- :mod:`.credentials`: SCRAM credentials (KIP-554) and PLAIN users from JAAS text;
- :mod:`.sasl`: the server side of PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER;
- :mod:`.tls`: a listener's TLS context from Kafka's ``ssl.*`` keys, and a client
  certificate's principal through ``ssl.principal.mapping.rules``;
- :mod:`.inter_broker`: the inter-broker listener and the client side of its security (TLS,
  the broker's own PLAIN/SCRAM login).
"""
