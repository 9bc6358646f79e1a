//! Who may install what where. Pure: the controllers pass in the namespace, the policies and
//! what the bundle brings, and get a verdict back.
//!
//! The trust model: cluster admins are trusted (they write Catalogs, InstallPolicies, the
//! manager's configuration and anything cluster-scoped). Everyone else, a namespace admin
//! included, is not: nothing they can write may make windlass create or grant anything they
//! could not create or grant themselves. So:
//!
//! - a namespace's operators are installed **as the namespace's install ServiceAccount**
//!   (impersonated), unless an InstallPolicy marks the namespace trusted; the API server then
//!   refuses whatever that account could not create or grant;
//! - **cluster-scoped objects** (CRDs, ClusterRoles and their bindings, webhook
//!   configurations) are created by the manager itself, and only where a policy grants them;
//! - **install modes** are enforced: the operator watches its own namespace unless a policy
//!   lets it watch others (and the CSV supports that mode).
//!
//! [`policy`] evaluates InstallPolicies; [`scope`] shows what they let a namespace do; [`modes`] turns target namespaces into OLM's install
//! modes; [`needs`] lists the cluster-scoped grants a bundle needs.

pub mod modes;
pub mod needs;
pub mod policy;
pub mod scope;

pub use modes::{InstallModeError, install_mode, resolve_targets};
pub use needs::{BundleShape, needs};
pub use policy::{
    DEFAULT_SERVICE_ACCOUNT, Identity, InstallRequest, NamespaceFacts, Narrowed, NotPermitted,
    Permit, Refusal, evaluate, evaluate_running, grants,
};
pub use scope::install_scope;
