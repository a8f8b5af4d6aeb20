//! A lab's life, written once: built (under the name asked, or the first free `x1`, `x2`, …), its
//! record vouched for by its journal, the other guest's lab beside it where asked, and removed when
//! dropped — or by `remove`, which says what could not be given back. A lab made by `vnetlab up`
//! is opened, not owned: it outlives the test.

use super::state::LabRecord;
use super::topology::Topology;
use super::{build, folder, Error};

/// A lab this process uses.
pub struct Lab {
    name: String,
    rec: LabRecord,
    /// The other guest's lab, beside this one (`udp-flood@other`).
    other: Option<Box<Lab>>,
    /// Removed when dropped (false: a lab `vnetlab up` made, opened for a test).
    owned: bool,
}

/// The most names `build_free` tries before giving up on finding a free one.
const NAME_TRIES: u32 = 999;

impl Lab {
    /// Builds `t` under its own name; the lab belongs to this process (`cleanup` removes it if the
    /// process dies first).
    pub fn build(t: &Topology) -> Result<Lab, Error> {
        let plan = build::prepare(t)?;
        let rec = build::build(&plan, false, false)?;
        Ok(Lab {
            name: t.name.clone(),
            rec,
            other: None,
            owned: true,
        })
    }

    /// Builds the topology `t(name)` under the first free name `PREFIX1`, `PREFIX2`, …: the journal
    /// made with `create_new` is the reservation, so two runs at once never take the same name,
    /// and a name another lab's objects hold is passed over.
    pub fn build_free(prefix: &str, t: impl Fn(&str) -> Topology) -> Result<Lab, Error> {
        for i in 1..=NAME_TRIES {
            let name = format!("{prefix}{i}");
            let ns = format!("vl{name}-");
            if folder::journal_path(&name).exists()
                || build::netns_list().iter().any(|n| n.starts_with(&ns))
            {
                continue;
            }
            match Lab::build(&t(&name)) {
                Err(Error::Taken(_)) => continue,
                r => return r,
            }
        }
        Err(Error::Failed(format!(
            "no free lab name among {prefix}1…{prefix}{NAME_TRIES}: remove stale labs with `vnetlab cleanup`"
        )))
    }

    /// The other guest's lab beside this one, named as this one with `o` after it, when `t` gives
    /// its topology; if it cannot be built, this one is removed too.
    pub fn with_other(mut self, t: impl FnOnce(&str) -> Option<Topology>) -> Result<Lab, Error> {
        if let Some(top) = t(&format!("{}o", self.name)) {
            self.other = Some(Box::new(Lab::build(&top)?));
        }
        Ok(self)
    }

    /// A lab `vnetlab up` made (the only one if none is named), its record vouched for by its
    /// journal; not removed when dropped.
    pub fn open(name: Option<&str>) -> Result<Lab, Error> {
        let name = crate::lab::state::resolve(name)?;
        let rec = crate::lab::state::load(&name)?;
        Ok(Lab {
            name,
            rec,
            other: None,
            owned: false,
        })
    }

    /// Builds `t` to outlive this process (`vnetlab up`, with progress on a terminal when
    /// `progress`): its journal marks it kept, so only `down` (or `cleanup --force`) removes it.
    /// The record is the one on disk, with what the build learnt (the VMs' boot times).
    pub fn up(t: &Topology, progress: bool) -> Result<LabRecord, Error> {
        let plan = build::prepare(t)?;
        let built = build::build(&plan, progress, true)?;
        Ok(crate::lab::state::load(&t.name).unwrap_or(built))
    }

    /// Removes the lab `name` by its journal (one `up` made, or one a dead process left): what
    /// could not be given back.
    pub fn down(name: &str) -> Result<Vec<String>, Error> {
        build::down(name)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn record(&self) -> &LabRecord {
        &self.rec
    }

    /// The other guest's lab's record, if it has one.
    pub fn other(&self) -> Option<&LabRecord> {
        self.other.as_ref().map(|o| &o.rec)
    }

    /// Removes the lab (the other guest's first): what could not be given back (a vanished
    /// uplink), or why it could not be removed.
    pub fn remove(mut self) -> Result<Vec<String>, Error> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<Vec<String>, Error> {
        if !self.owned {
            return Ok(vec![]);
        }
        self.owned = false;
        let mut said = match self.other.take() {
            Some(o) => o.remove()?,
            None => vec![],
        };
        said.extend(build::teardown(&self.name).map_err(|e| {
            Error::Failed(format!(
                "removing lab {}: {e} (run `vnetlab cleanup`)",
                self.name
            ))
        })?);
        Ok(said)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// Removes the labs of this state folder whose owner is gone and that `up` did not keep (an
/// interrupted run's): the labs removed, and what could not be.
pub fn remove_abandoned() -> (Vec<String>, Vec<String>) {
    let (mut removed, mut errors) = (Vec::new(), Vec::new());
    for lab in super::folder::labs() {
        let entries = match super::journal::read(&super::folder::journal_path(&lab), &lab) {
            Ok(e) => e,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        if let super::journal::Usage::Abandoned { .. } =
            super::journal::usage(&entries, crate::sys::alive)
        {
            match Lab::down(&lab) {
                Ok(_) => removed.push(lab),
                Err(e) => errors.push(format!("{lab}: {e}")),
            }
        }
    }
    (removed, errors)
}
