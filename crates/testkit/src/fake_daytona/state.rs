//! What the fake Daytona holds: sandboxes (each with its directory), snapshots, faults, the request log.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rand::Rng;
use serde_json::{Value, json};
use tempfile::TempDir;
use trueforge_protocol::sync::lock;

use super::exec::Processes;
use super::{FakeDaytonaOptions, FakeSandbox};

pub(crate) struct Sandbox {
    pub id: String,
    pub name: String,
    pub state: String,
    pub snapshot: Option<String>,
    pub auto_stop_interval: Option<i64>,
    pub auto_archive_interval: Option<i64>,
    pub auto_delete_interval: Option<i64>,
    pub created_at: String,
    /// Shared with commands still running there, so deleting the sandbox never pulls the directory from
    /// under them mid-way; the directory goes when the last holder lets go.
    pub dir: Arc<TempDir>,
}

pub(crate) struct Snapshot {
    pub id: String,
    pub name: String,
    pub image_name: Option<String>,
    pub state: String,
    pub error_reason: Option<String>,
    pub created_at: String,
}

#[derive(Default)]
pub(crate) struct Faults {
    pub fail_next: u32,
    pub delay_next: Option<(u32, Duration)>,
}

#[derive(Default)]
struct Records {
    /// By id.
    sandboxes: HashMap<String, Sandbox>,
    /// By id.
    snapshots: HashMap<String, Snapshot>,
    requests: Vec<String>,
}

pub(crate) struct State {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub options: FakeDaytonaOptions,
    records: Mutex<Records>,
    faults: Mutex<Faults>,
    pub processes: Processes,
}

/// What the toolbox needs of a sandbox: its files and whether it runs.
pub(crate) struct ToolboxTarget {
    pub dir: Arc<TempDir>,
    pub state: String,
}

impl State {
    pub fn new(base: String, options: FakeDaytonaOptions) -> Self {
        let state = Self {
            base,
            options,
            records: Mutex::new(Records::default()),
            faults: Mutex::new(Faults::default()),
            processes: Processes::default(),
        };
        for name in state.options.snapshots.clone() {
            state.set_snapshot(&name, "active", None);
        }
        state
    }

    pub fn faults(&self) -> MutexGuard<'_, Faults> {
        lock(&self.faults)
    }

    pub fn record_request(&self, line: String) {
        lock(&self.records).requests.push(line);
    }

    pub fn requests(&self) -> Vec<String> {
        lock(&self.records).requests.clone()
    }

    // Sandboxes.

    /// Makes a sandbox, `Err((status, message))` as Daytona refuses one.
    pub fn create_sandbox(
        &self,
        name: Option<String>,
        snapshot: Option<String>,
        intervals: [Option<i64>; 3],
    ) -> Result<Value, (u16, String)> {
        let mut records = lock(&self.records);
        if let Some(snapshot) = &snapshot {
            let found = records
                .snapshots
                .values()
                .find(|candidate| &candidate.name == snapshot || &candidate.id == snapshot);
            match found {
                None => return Err((404, format!("Snapshot {snapshot} not found"))),
                Some(found) if found.state != "active" => {
                    return Err((400, format!("Snapshot {snapshot} is {}", found.state)));
                }
                Some(_) => {}
            }
        }
        let id = new_uuid();
        let name = name.unwrap_or_else(|| id.clone());
        if records.sandboxes.values().any(|sandbox| sandbox.name == name) {
            return Err((409, format!("Sandbox with name {name} already exists")));
        }
        let dir = TempDir::with_prefix("fake-daytona-").map_err(|error| (500, error.to_string()))?;
        let home = host_path(dir.path(), &self.options.home).ok_or((500, "bad home".to_owned()))?;
        std::fs::create_dir_all(home).map_err(|error| (500, error.to_string()))?;
        let [auto_stop_interval, auto_archive_interval, auto_delete_interval] = intervals;
        let sandbox = Sandbox {
            id: id.clone(),
            name,
            state: "started".to_owned(),
            snapshot,
            auto_stop_interval,
            auto_archive_interval,
            auto_delete_interval,
            created_at: now(),
            dir: Arc::new(dir),
        };
        let dto = self.sandbox_dto(&sandbox);
        records.sandboxes.insert(id, sandbox);
        Ok(dto)
    }

    pub fn sandbox_json(&self, id_or_name: &str) -> Option<Value> {
        let records = lock(&self.records);
        find_sandbox(&records, id_or_name).map(|sandbox| self.sandbox_dto(sandbox))
    }

    pub fn remove_sandbox(&self, id_or_name: &str) -> Option<Value> {
        let mut records = lock(&self.records);
        let id = find_sandbox(&records, id_or_name)?.id.clone();
        let sandbox = records.sandboxes.remove(&id)?;
        drop(records);
        self.processes.kill_sandbox(&id);
        Some(self.sandbox_dto(&sandbox))
    }

    pub fn set_sandbox_state(&self, id_or_name: &str, state: &str) -> bool {
        let mut records = lock(&self.records);
        let Some(id) = find_sandbox(&records, id_or_name).map(|sandbox| sandbox.id.clone()) else {
            return false;
        };
        let Some(sandbox) = records.sandboxes.get_mut(&id) else {
            return false;
        };
        state.clone_into(&mut sandbox.state);
        drop(records);
        if state != "started" {
            self.processes.kill_sandbox(&id);
        }
        true
    }

    pub fn sandbox_info(&self, id_or_name: &str) -> Option<FakeSandbox> {
        let records = lock(&self.records);
        find_sandbox(&records, id_or_name).map(|sandbox| FakeSandbox {
            id: sandbox.id.clone(),
            name: sandbox.name.clone(),
            state: sandbox.state.clone(),
            snapshot: sandbox.snapshot.clone(),
            auto_stop_interval: sandbox.auto_stop_interval,
            auto_archive_interval: sandbox.auto_archive_interval,
            auto_delete_interval: sandbox.auto_delete_interval,
            root: sandbox.dir.path().to_path_buf(),
        })
    }

    /// The toolbox addresses a sandbox by id only, as Daytona's toolbox proxy does.
    pub fn toolbox_target(&self, sandbox_id: &str) -> Option<ToolboxTarget> {
        let records = lock(&self.records);
        records.sandboxes.get(sandbox_id).map(|sandbox| ToolboxTarget {
            dir: sandbox.dir.clone(),
            state: sandbox.state.clone(),
        })
    }

    fn sandbox_dto(&self, sandbox: &Sandbox) -> Value {
        let mut dto = json!({
            "id": sandbox.id,
            "organizationId": "fake-organization",
            "name": sandbox.name,
            "snapshot": sandbox.snapshot,
            "user": "trueforge",
            "env": {},
            "labels": {},
            "public": false,
            "target": "us",
            "cpu": 1,
            "gpu": 0,
            "memory": 1,
            "disk": 3,
            "state": sandbox.state,
            "desiredState": sandbox.state,
            "errorReason": null,
            "autoStopInterval": sandbox.auto_stop_interval,
            "autoArchiveInterval": sandbox.auto_archive_interval,
            "autoDeleteInterval": sandbox.auto_delete_interval,
            "createdAt": sandbox.created_at,
            "updatedAt": sandbox.created_at,
        });
        if !self.options.omit_toolbox_proxy_url
            && let Some(object) = dto.as_object_mut()
        {
            object.insert("toolboxProxyUrl".to_owned(), json!(format!("{}/toolbox", self.base)));
        }
        dto
    }

    // Snapshots.

    pub fn set_snapshot(&self, name: &str, state: &str, error_reason: Option<&str>) {
        let mut records = lock(&self.records);
        let existing = records.snapshots.values_mut().find(|snapshot| snapshot.name == name);
        match existing {
            Some(snapshot) => {
                state.clone_into(&mut snapshot.state);
                snapshot.error_reason = error_reason.map(str::to_owned);
            }
            None => {
                let id = new_uuid();
                records.snapshots.insert(
                    id.clone(),
                    Snapshot {
                        id,
                        name: name.to_owned(),
                        image_name: None,
                        state: state.to_owned(),
                        error_reason: error_reason.map(str::to_owned),
                        created_at: now(),
                    },
                );
            }
        }
    }

    pub fn snapshot_state(&self, name: &str) -> Option<String> {
        let records = lock(&self.records);
        find_snapshot(&records, name).map(|snapshot| snapshot.state.clone())
    }

    pub fn create_snapshot(&self, name: String, image_name: Option<String>) -> Result<Value, (u16, String)> {
        let mut records = lock(&self.records);
        if find_snapshot(&records, &name).is_some() {
            return Err((409, format!("Snapshot with name {name} already exists")));
        }
        let id = new_uuid();
        // A real registration pulls and validates the image first; tests move it on with `set_snapshot`.
        let snapshot = Snapshot {
            id: id.clone(),
            name,
            image_name,
            state: "pending".to_owned(),
            error_reason: None,
            created_at: now(),
        };
        let dto = snapshot_dto(&snapshot);
        records.snapshots.insert(id, snapshot);
        Ok(dto)
    }

    pub fn snapshot_json(&self, id_or_name: &str) -> Option<Value> {
        let records = lock(&self.records);
        find_snapshot(&records, id_or_name).map(snapshot_dto)
    }

    pub fn remove_snapshot(&self, id_or_name: &str) -> bool {
        let mut records = lock(&self.records);
        let Some(id) = find_snapshot(&records, id_or_name).map(|snapshot| snapshot.id.clone()) else {
            return false;
        };
        records.snapshots.remove(&id).is_some()
    }

    /// Activates an inactive snapshot, `Err((status, message))` as Daytona refuses it.
    pub fn activate_snapshot(&self, id_or_name: &str) -> Result<Value, (u16, String)> {
        let mut records = lock(&self.records);
        let Some(id) = find_snapshot(&records, id_or_name).map(|snapshot| snapshot.id.clone()) else {
            return Err((404, format!("Snapshot {id_or_name} not found")));
        };
        let Some(snapshot) = records.snapshots.get_mut(&id) else {
            return Err((404, format!("Snapshot {id_or_name} not found")));
        };
        if snapshot.state != "inactive" {
            return Err((400, format!("Snapshot {id_or_name} is not inactive")));
        }
        "active".clone_into(&mut snapshot.state);
        Ok(snapshot_dto(snapshot))
    }
}

fn find_sandbox<'a>(records: &'a Records, id_or_name: &str) -> Option<&'a Sandbox> {
    records
        .sandboxes
        .get(id_or_name)
        .or_else(|| records.sandboxes.values().find(|sandbox| sandbox.name == id_or_name))
}

fn find_snapshot<'a>(records: &'a Records, id_or_name: &str) -> Option<&'a Snapshot> {
    records
        .snapshots
        .get(id_or_name)
        .or_else(|| records.snapshots.values().find(|snapshot| snapshot.name == id_or_name))
}

fn snapshot_dto(snapshot: &Snapshot) -> Value {
    json!({
        "id": snapshot.id,
        "organizationId": "fake-organization",
        "general": false,
        "name": snapshot.name,
        "imageName": snapshot.image_name,
        "state": snapshot.state,
        "size": null,
        "entrypoint": null,
        "cpu": 1,
        "gpu": 0,
        "mem": 1,
        "disk": 3,
        "errorReason": snapshot.error_reason,
        "createdAt": snapshot.created_at,
        "updatedAt": snapshot.created_at,
        "lastUsedAt": null,
    })
}

/// The host path of sandbox path `path` under `root`; `None` for a relative path or one with `..`.
pub(crate) fn host_path(root: &Path, path: &str) -> Option<PathBuf> {
    let path = Path::new(path);
    if !path.is_absolute() {
        return None;
    }
    let mut host = root.to_path_buf();
    for component in path.components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(part) => host.push(part),
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(host)
}

fn new_uuid() -> String {
    let bytes: [u8; 16] = rand::rng().random();
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
