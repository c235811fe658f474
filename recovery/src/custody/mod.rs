//! The top floor: custody of a database and its evidence, built on a whole recovery
//! ([`crate::recover()`]) and the ground floor ([`crate::base`]): evidence bundles
//! ([`bundle`]), backups of live databases and their restore ([`backup`]), and the repair
//! of a database at its own path ([`repair`]).

pub mod backup;
pub mod bundle;
pub mod repair;
