//! A real Prometheus for tests: Debian's `prometheus` package, started on a free 127.0.0.1
//! port with a configuration and data directory of its own, scraping itself every second (so
//! `up{job="prometheus"}` is a real series), optionally serving HTTPS with a CA of the test's.
//! [`Prometheus::stop`] kills the process, which is what an outage is; [`Prometheus::start_again`]
//! brings it back on the same port and data.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// The `prometheus` binary: `WINDLASS_PROMETHEUS`, else the one on `PATH`.
pub fn binary() -> PathBuf {
    if let Some(path) = std::env::var_os("WINDLASS_PROMETHEUS") {
        return PathBuf::from(path);
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("prometheus"))
                .find(|candidate| candidate.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "prometheus is not installed: `make prerequisites` installs Debian's prometheus package (or set WINDLASS_PROMETHEUS)"
            )
        })
}

/// A CA and the serving certificate it signed for 127.0.0.1, PEM.
pub struct TestCa {
    pub ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

impl TestCa {
    pub fn generate() -> TestCa {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate().expect("a CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca.distinguished_name
            .push(DnType::CommonName, "windlass test CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        let ca_cert = ca.self_signed(&ca_key).expect("a CA certificate");
        let key = KeyPair::generate().expect("a serving key");
        let mut serving = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
            .expect("serving parameters");
        serving
            .distinguished_name
            .push(DnType::CommonName, "127.0.0.1");
        serving.is_ca = IsCa::ExplicitNoCa;
        let cert = serving
            .signed_by(&key, &Issuer::from_params(&ca, &ca_key))
            .expect("a serving certificate");
        TestCa {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// One Prometheus process and its files; killed when dropped.
pub struct Prometheus {
    pub port: u16,
    dir: PathBuf,
    tls: bool,
    child: Option<Child>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

impl Prometheus {
    /// Starts a plain-HTTP Prometheus and waits until it is ready.
    pub fn start() -> Prometheus {
        Prometheus::launch(None)
    }

    /// Starts one serving HTTPS with a certificate `ca` signed, and waits until it is ready.
    pub fn start_tls(ca: &TestCa) -> Prometheus {
        Prometheus::launch(Some(ca))
    }

    fn launch(ca: Option<&TestCa>) -> Prometheus {
        let port = free_port();
        let dir = std::env::temp_dir().join(crate::unique_name("prometheus"));
        std::fs::create_dir_all(dir.join("data")).expect("the Prometheus data directory");
        let scheme = if ca.is_some() { "https" } else { "http" };
        let mut scrape = format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
             scrape_configs:\n\
             - job_name: prometheus\n  scheme: {scheme}\n  static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"
        );
        if let Some(ca) = ca {
            write(&dir.join("ca.crt"), &ca.ca_pem);
            write(&dir.join("tls.crt"), &ca.cert_pem);
            write(&dir.join("tls.key"), &ca.key_pem);
            scrape.push_str(&format!(
                "  tls_config: {{ca_file: '{}'}}\n",
                dir.join("ca.crt").display()
            ));
            write(
                &dir.join("web.yml"),
                &format!(
                    "tls_server_config: {{cert_file: '{}', key_file: '{}'}}\n",
                    dir.join("tls.crt").display(),
                    dir.join("tls.key").display()
                ),
            );
        }
        write(&dir.join("prometheus.yml"), &scrape);
        let mut prometheus = Prometheus {
            port,
            dir,
            tls: ca.is_some(),
            child: None,
        };
        prometheus.start_again();
        prometheus
    }

    /// The base URL of its query API.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// (Re)starts the process on the same port and data, and waits until it is ready.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "Prometheus is running already");
        let log = std::fs::File::create(self.dir.join("prometheus.log")).expect("its log file");
        let mut command = Command::new(binary());
        command
            .arg(format!(
                "--config.file={}",
                self.dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                self.dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{}", self.port))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("its log file"))
            .stderr(log);
        if self.tls {
            command.arg(format!(
                "--web.config.file={}",
                self.dir.join("web.yml").display()
            ));
        }
        self.child = Some(command.spawn().expect("starting prometheus"));
        self.wait_ready();
    }

    /// Kills the process (an outage) and waits until it is gone.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits until `/-/ready` answers through the port (TLS is not checked here: the test
    /// checks what windlass makes of it).
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(exit)) = child.try_wait()
            {
                panic!(
                    "prometheus exited ({exit}): {}",
                    std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
                );
            }
            let mut curl = Command::new("curl");
            curl.args(["-sf", "-o", "/dev/null", "--max-time", "2"]);
            if self.tls {
                curl.arg("--cacert").arg(self.dir.join("ca.crt"));
            }
            let ready = curl
                .arg(format!("{}/-/ready", self.url()))
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "prometheus on port {} not ready within 60 s: {}",
                self.port,
                std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits until `query` returns at least one sample (the first scrapes have landed).
    pub fn wait_for_sample(&self, query: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let mut curl = Command::new("curl");
            curl.args(["-s", "--max-time", "2", "-G", "--data-urlencode"])
                .arg(format!("query={query}"));
            if self.tls {
                curl.arg("--cacert").arg(self.dir.join("ca.crt"));
            }
            let answer = curl
                .arg(format!("{}/api/v1/query", self.url()))
                .output()
                .ok()
                .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok());
            if answer
                .as_ref()
                .and_then(|a| a["data"]["result"].as_array())
                .is_some_and(|r| !r.is_empty())
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "prometheus on port {} has no sample for {query} after 60 s: {answer:?}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
