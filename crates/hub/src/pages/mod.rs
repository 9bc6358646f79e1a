//! The hub's pages, rendered on the server: the list, a package, the installed view, sign-in.

pub mod delisting;
pub mod installed;
pub mod instances;
pub mod list;
pub mod login;
pub mod package;

pub use installed::{Installed, Listing, installed_page};
pub use list::{PAGE_SIZE, list_page};
pub use login::{error_page, login_page};
pub use package::{Around, InstallDefaults, package_page};
