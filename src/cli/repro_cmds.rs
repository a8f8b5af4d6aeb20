//! `vnetlab reproduce`: the command's flags, checks and output; the loop over papers and suites
//! is `reproduce::run`'s, measuring through this command's runner (with its progress).

use clap::Args;
use std::path::PathBuf;

use super::exp_cmds::{execute, existing, output_dir};
use super::fail::{CmdResult, Fail};
use super::shared::{need_lab_root, print_json};
use crate::reproduce::{self, run::Ask, run::Want};
use crate::store::Store;

#[derive(Args)]
pub struct ReproduceArgs {
    /// The paper (its folder's name under experiments/papers/, e.g. xen-lro), or all
    #[arg(default_value = "all")]
    paper: String,
    /// Run the reduced grids (all four papers' in about 10 minutes on a 2-core host)
    #[arg(long)]
    quick: bool,
    /// The results store (SQLite); made if missing
    #[arg(long, default_value = "vnetlab.sqlite")]
    db: PathBuf,
    /// Make the store in --db even if it is an existing empty file
    #[arg(long)]
    create: bool,
    /// Where the pages go (one per paper, an index, and each run's full report)
    #[arg(long, default_value = "out")]
    out: PathBuf,
    /// Measure nothing: render the pages from the latest complete stored run of each suite
    #[arg(long)]
    from_runs: bool,
    /// With --from-runs: read a suite's newest run even if it was interrupted or never finished
    /// (by default such runs are named and passed over: a verdict from half a run is not one)
    #[arg(long, requires = "from_runs")]
    include_unfinished: bool,
    /// Which guests: auto (QEMU where the host runs it under KVM, else network namespaces),
    /// netns, or qemu (QEMU even under TCG, where every point is bound by the emulated CPU)
    #[arg(long, value_enum, default_value = "auto")]
    guests: GuestsArg,
    #[command(flatten)]
    site: super::exp_cmds::SiteArgs,
    /// One JSON document on stdout, for scripts
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, PartialEq, clap::ValueEnum)]
enum GuestsArg {
    Auto,
    Netns,
    Qemu,
}

impl From<GuestsArg> for Want {
    fn from(g: GuestsArg) -> Want {
        match g {
            GuestsArg::Auto => Want::Auto,
            GuestsArg::Netns => Want::Netns,
            GuestsArg::Qemu => Want::Qemu,
        }
    }
}

pub fn reproduce(a: ReproduceArgs) -> CmdResult {
    let papers = reproduce::select(&a.paper)?;
    let site = if !a.from_runs {
        need_lab_root("vnetlab reproduce")?;
        // Refused before the first suite runs, not after it.
        a.site.site()?
    } else if a.site.uplink.is_some() {
        return Err(Fail::Input(
            "--from-runs measures nothing: drop --uplink/--client".into(),
        ));
    } else {
        None
    };
    // One measurement at a time on the machine, once the state folder and site are known good.
    let _machine = match a.from_runs {
        false => super::shared::hold_machine("vnetlab reproduce", std::time::Duration::ZERO)?,
        true => None,
    };
    let ask = Ask {
        quick: a.quick,
        from_runs: a.from_runs,
        include_unfinished: a.include_unfinished,
        guests: a.guests.into(),
        quiet: a.json,
        db: crate::text::clip(&a.db.display().to_string()),
        out: a.out.clone(),
        site,
    };
    let store = if a.from_runs {
        let store = existing(&a.db)?;
        reproduce::run::any_stored(&ask, &store, &papers)?;
        store
    } else {
        Store::open(&a.db, a.create)?
    };
    output_dir(&a.out)?;
    let t0 = std::time::Instant::now();
    crate::sys::signals::install();
    let mut runner = |l: &crate::experiment::run::Loaded, s: &Store| {
        let outlet = crate::experiment::run::begin(l, Ok(s), None, None)?;
        execute(l, &outlet, a.json)
    };
    let done = reproduce::run::reproduce(&ask, &mut runner, &store, &papers)?;
    let secs = t0.elapsed().as_secs_f64();
    if a.json {
        print_json(&serde_json::json!({"papers": done, "seconds": secs}));
    } else {
        crate::outln!(
            "{} paper(s) in {:.0} s; pages in {}",
            done.len(),
            secs,
            a.out.join("index.html").display()
        );
    }
    let failed: usize = done.iter().map(|d| d.failed_points).sum();
    if failed > 0 {
        return Err(Fail::Partial(format!(
            "{failed} point(s) failed (each run's page says why); the claims that read them are not measurable (exit {})",
            super::fail::PARTIAL
        )));
    }
    Ok(())
}
