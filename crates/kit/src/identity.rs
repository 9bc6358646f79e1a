//! Acting as an install identity: clients that impersonate a ServiceAccount, so the API server
//! decides with that account's RBAC what an install may create and grant. One client per
//! identity is kept, sharing nothing but the manager's connection settings.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use kube::{Client, Config};

/// Makes (and keeps) clients acting as other identities.
#[derive(Clone)]
pub struct Identities {
    config: Config,
    clients: Arc<Mutex<HashMap<String, Client>>>,
    own: Client,
}

impl Identities {
    /// `config` is what `own` (the manager's client) was built from.
    pub fn new(config: Config, own: Client) -> Identities {
        Identities {
            config,
            clients: Arc::default(),
            own,
        }
    }

    /// A client acting as `username` (`None`: the manager's own). The API server adds a
    /// ServiceAccount's groups itself when the user is one.
    pub fn client_for(&self, username: Option<&str>) -> Result<Client, kube::Error> {
        let Some(username) = username else {
            return Ok(self.own.clone());
        };
        let mut clients = self.clients.lock().expect("identity clients poisoned");
        if let Some(client) = clients.get(username) {
            return Ok(client.clone());
        }
        let mut config = self.config.clone();
        config.auth_info.impersonate = Some(username.to_string());
        config.auth_info.impersonate_groups = None;
        let client = Client::try_from(config)?;
        clients.insert(username.to_string(), client.clone());
        Ok(client)
    }

    /// The ServiceAccount `name` in `namespace`, as the API server names its user.
    pub fn service_account(namespace: &str, name: &str) -> String {
        format!("system:serviceaccount:{namespace}:{name}")
    }
}
