//! Holding back status writes that only reword progress.
//!
//! While an install moves, the messages that describe it change several times a second (a
//! requirement met, a rollout started, a replica ready), and every status that shows another
//! object's progress changes with them. Each of those writes costs the API server as much as a
//! real transition, and on a busy cluster they are most of an install's writes. A status whose
//! only difference from the one in the cluster is the text of its messages therefore waits
//! until the object's last status write by this controller is [`PROGRESS_HOLD`] old; a
//! transition (a phase, a condition's status or reason, anything but a message) is written at
//! once, carrying the newest messages with it. An install that finishes within the hold never
//! writes its intermediate messages; one that stalls shows why a few seconds later.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use serde::Serialize;
use serde_json::Value;

/// How long a message-only change waits after the object's last status write.
pub const PROGRESS_HOLD: Duration = Duration::from_secs(5);

/// When this controller last wrote each object's status (by uid), for the objects written
/// within the hold (see the module documentation).
pub struct ProgressHold {
    hold: Duration,
    written: Mutex<HashMap<String, Instant>>,
}

impl Default for ProgressHold {
    fn default() -> Self {
        ProgressHold::new(PROGRESS_HOLD)
    }
}

/// A map this small is pruned on every write; past it, writes prune what the hold no longer
/// covers.
const PRUNE_ABOVE: usize = 64;

impl ProgressHold {
    pub fn new(hold: Duration) -> ProgressHold {
        ProgressHold {
            hold,
            written: Mutex::default(),
        }
    }

    /// How long the write of `new` over `old` should wait, or `None` to write it now: it waits
    /// only when the two differ in messages alone and this controller wrote the object's status
    /// less than the hold ago.
    pub fn wait<S: Serialize>(
        &self,
        uid: &str,
        old: &S,
        new: &S,
        now: Instant,
    ) -> Option<Duration> {
        let last = *self.lock().get(uid)?;
        let remaining = self.hold.checked_sub(now.saturating_duration_since(last))?;
        if remaining.is_zero() || !only_messages_differ(old, new) {
            return None;
        }
        Some(remaining)
    }

    /// How long a status that only takes an install one step along its usual path should wait
    /// (the caller says which changes those are: never an outcome, a refusal or a wait on a
    /// person), or `None` to write it now. It waits as a reworded status does: until this
    /// controller's last status write of the object is a hold old, or, for an object it has not
    /// written yet, until it has held such a status for that long. An install that finishes
    /// within the hold goes straight to its outcome; one that stalls shows the step after it.
    pub fn wait_for_step(&self, uid: &str, now: Instant) -> Option<Duration> {
        let since = *self.lock().entry(uid.to_string()).or_insert(now);
        self.hold
            .checked_sub(now.saturating_duration_since(since))
            .filter(|remaining| !remaining.is_zero())
    }

    /// Records a status write of `uid` at `now`.
    pub fn wrote(&self, uid: &str, now: Instant) {
        let mut written = self.lock();
        if written.len() > PRUNE_ABOVE {
            written.retain(|_, at| now.saturating_duration_since(*at) < self.hold);
        }
        written.insert(uid.to_string(), now);
    }

    /// Drops what is known of `uid` (the object is gone).
    pub fn forget(&self, uid: &str) {
        self.lock().remove(uid);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.written.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether `old` and `new` serialize to the same JSON once every `message` field, at any depth,
/// is set aside. Equal values are not "only messages": there is nothing to write.
pub fn only_messages_differ<S: Serialize>(old: &S, new: &S) -> bool {
    let (Ok(mut old), Ok(mut new)) = (serde_json::to_value(old), serde_json::to_value(new)) else {
        return false;
    };
    if old == new {
        return false;
    }
    drop_messages(&mut old);
    drop_messages(&mut new);
    old == new
}

fn drop_messages(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("message");
            map.values_mut().for_each(drop_messages);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_messages),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn status(phase: &str, message: &str) -> Value {
        json!({
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "False", "reason": phase, "message": message}],
            "plan": [{"name": "Objects", "status": "InProgress", "message": message}],
        })
    }

    #[test]
    fn only_a_change_of_wording_is_a_message_only_change() {
        let waiting = status("Installing", "waiting for the rollout");
        assert!(only_messages_differ(
            &waiting,
            &status("Installing", "0 of 1 replicas available")
        ));
        assert!(!only_messages_differ(&waiting, &waiting));
        assert!(!only_messages_differ(
            &waiting,
            &status("Succeeded", "waiting for the rollout")
        ));
        let mut step_done = waiting.clone();
        step_done["plan"][0]["status"] = json!("Done");
        assert!(!only_messages_differ(&waiting, &step_done));
        // A message appearing where there was none is still only a message.
        let mut without = waiting.clone();
        without["plan"][0]
            .as_object_mut()
            .unwrap()
            .remove("message");
        assert!(only_messages_differ(&without, &waiting));
    }

    #[test]
    fn a_message_only_change_waits_for_the_hold_after_the_last_write() {
        let hold = ProgressHold::new(Duration::from_secs(5));
        let start = Instant::now();
        let old = status("Installing", "a");
        let reworded = status("Installing", "b");
        let moved_on = status("Succeeded", "b");
        // Nothing written by this controller yet: write at once.
        assert_eq!(hold.wait("uid", &old, &reworded, start), None);
        hold.wrote("uid", start);
        let later = start + Duration::from_secs(2);
        assert_eq!(
            hold.wait("uid", &old, &reworded, later),
            Some(Duration::from_secs(3))
        );
        // A transition never waits.
        assert_eq!(hold.wait("uid", &old, &moved_on, later), None);
        // Past the hold, the reworded status is written.
        let past = start + Duration::from_secs(5);
        assert_eq!(hold.wait("uid", &old, &reworded, past), None);
        // Other objects are their own.
        assert_eq!(hold.wait("other", &old, &reworded, later), None);
        hold.forget("uid");
        assert_eq!(hold.wait("uid", &old, &reworded, later), None);
    }

    #[test]
    fn a_step_along_the_path_waits_for_the_hold_after_the_last_write_or_the_first_step() {
        let hold = ProgressHold::new(Duration::from_secs(5));
        let start = Instant::now();
        // Not written yet: the hold counts from the first step held.
        assert_eq!(
            hold.wait_for_step("new", start),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            hold.wait_for_step("new", start + Duration::from_secs(4)),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            hold.wait_for_step("new", start + Duration::from_secs(5)),
            None
        );
        // Written before: the hold counts from that write.
        hold.wrote("written", start);
        assert_eq!(
            hold.wait_for_step("written", start + Duration::from_secs(2)),
            Some(Duration::from_secs(3))
        );
        hold.wrote("written", start + Duration::from_secs(2));
        assert_eq!(
            hold.wait_for_step("written", start + Duration::from_secs(3)),
            Some(Duration::from_secs(4))
        );
        assert_eq!(
            hold.wait_for_step("written", start + Duration::from_secs(8)),
            None
        );
    }

    #[test]
    fn old_writes_are_pruned() {
        let hold = ProgressHold::new(Duration::from_secs(5));
        let start = Instant::now();
        for i in 0..=PRUNE_ABOVE {
            hold.wrote(&format!("old-{i}"), start);
        }
        hold.wrote("new", start + Duration::from_secs(6));
        hold.wrote("newer", start + Duration::from_secs(6));
        assert_eq!(hold.lock().len(), 2);
    }
}
