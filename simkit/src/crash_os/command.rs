//! The command lines of a `crash-os` run: the child's (this binary again,
//! with the seed, the kit's settings, the directory and the index to start
//! at) and the one a person reruns the schedule with. The settings go to
//! the child as flags, so it rebuilds exactly the parent's configuration
//! and workload from the seed.

use std::ffi::OsString;
use std::path::Path;

use super::super::{Adapter, Kit, KitSettings};
use super::{CrashOsRequest, KillRule};

/// The command line a person reruns this schedule with.
pub(super) fn rerun<A: Adapter>(kit: &Kit<A>, request: &CrashOsRequest) -> String {
    let KitSettings { program, target_flag, .. } = &kit.settings;
    let mut line = format!("{program} crash-os{target_flag} --seed {} --cycles {}", request.seed, request.cycles);
    line.push_str(&format!(" --max-kill-ms {}", request.max_kill_ms));
    for word in settings_args(kit) {
        line.push(' ');
        line.push_str(&word.to_string_lossy());
    }
    if request.early_ack {
        line.push_str(" --plant-early-ack");
    }
    if request.kill_rule != KillRule::default() {
        line.push_str(&format!(" --kill-rule {}", request.kill_rule.name()));
    }
    line
}

/// The flags that pin `kit`'s settings for a child: operations per chunk,
/// the adapter's plant, the engine's options, the clients.
fn settings_args<A: Adapter>(kit: &Kit<A>) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    if let Some(ops) = kit.settings.ops {
        args.extend(["--ops".into(), ops.to_string().into()]);
    }
    if let Some(plant) = kit.settings.plant {
        args.extend(["--plant".into(), plant.into()]);
    }
    for (key, value) in &kit.settings.options {
        args.extend(["--set".into(), format!("{key}={value}").into()]);
    }
    if let Some(clients) = kit.settings.clients {
        args.extend(["--clients".into(), clients.to_string().into()]);
    }
    args
}

/// The child's whole command line, to start at operation `from`.
pub(super) fn child_argv<A: Adapter>(kit: &Kit<A>, request: &CrashOsRequest, dir: &Path, from: u64) -> Vec<OsString> {
    let mut argv = request.child_command.clone();
    argv.extend(["--seed".into(), request.seed.to_string().into()]);
    argv.extend(settings_args(kit));
    if request.early_ack {
        argv.push("--plant-early-ack".into());
    }
    argv.extend(["--dir".into(), dir.as_os_str().to_owned(), "--child-from".into(), from.to_string().into()]);
    argv
}
