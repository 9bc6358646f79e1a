//! Registries of a test's own: Debian's docker-registry started on a free port of 127.0.0.1,
//! optionally asking for htpasswd credentials, which the test can stop (a real outage) and
//! start again on the same port and storage.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use windlass_oci::{Auth, RegistryOptions};

use crate::{run_ok, unique_name};

/// A docker-registry process; stopped when dropped.
pub struct RegistryProcess {
    pub addr: String,
    /// `(user, password)` when it asks for credentials.
    pub credentials: Option<(String, String)>,
    config: PathBuf,
    process: Option<Child>,
}

impl RegistryProcess {
    /// Starts a registry that lets anyone pull and push.
    pub fn open() -> RegistryProcess {
        RegistryProcess::start(None)
    }

    /// Starts a registry that asks for `user`'s `password` (bcrypt htpasswd).
    pub fn with_credentials(user: &str, password: &str) -> RegistryProcess {
        RegistryProcess::start(Some((user.to_string(), password.to_string())))
    }

    fn start(credentials: Option<(String, String)>) -> RegistryProcess {
        let dir = std::env::temp_dir().join(unique_name("windlass-test-registry"));
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port on 127.0.0.1")
            .port();
        let addr = format!("127.0.0.1:{port}");
        let mut config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {addr}\n",
            dir.join("data").display(),
        );
        if let Some((user, password)) = &credentials {
            let htpasswd = run_ok(Command::new("htpasswd").args(["-Bbn", user, password]));
            std::fs::write(dir.join("htpasswd"), htpasswd).unwrap();
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: windlass-e2e\n    path: {}\n",
                dir.join("htpasswd").display()
            ));
        }
        let path = dir.join("registry.yml");
        std::fs::write(&path, config).unwrap();
        let mut registry = RegistryProcess {
            addr,
            credentials,
            config: path,
            process: None,
        };
        registry.run();
        registry
    }

    /// Starts the process (again) on the same port and storage, and waits until it answers.
    pub fn run(&mut self) {
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&self.config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting docker-registry");
        self.process = Some(child);
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(&self.addr).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "docker-registry did not listen on {}",
                self.addr
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the process: the outage. Nothing answers on its port afterwards.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.process.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// How windlass's OCI code reaches it (plain HTTP, its credentials).
    pub fn options(&self) -> RegistryOptions {
        RegistryOptions {
            plain_http: true,
            auth: match &self.credentials {
                Some((username, password)) => Auth::Basic {
                    username: username.clone(),
                    password: password.clone(),
                },
                None => Auth::Anonymous,
            },
            ..Default::default()
        }
    }
}

impl Drop for RegistryProcess {
    fn drop(&mut self) {
        self.stop();
    }
}
