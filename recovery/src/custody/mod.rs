//! The top floor: custody of a database and its evidence, built on a whole recovery
//! ([`crate::recover()`]) and the ground floor ([`crate::base`]): evidence bundles
//! ([`bundle`]), backups of live databases and their restore ([`backup`]), the repair
//! of a database at its own path ([`repair`]), and a whole case at once: every database
//! under folders found, triaged and recovered ([`scan`]).

pub mod backup;
pub mod bundle;
pub mod repair;
pub mod scan;
