//! The gateway's one store: accounts, the catalogue, links, invitations and published
//! documents, in SQLite or PostgreSQL (see docs/gateway-design.md for the interface).
