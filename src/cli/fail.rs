//! How a command fails and the exit code each failure gets, for people and for the fleet engines
//! that drive `run` across a farm: the work failed (1), what was asked (2), some points failed
//! (3), this host lacks what the experiment needs and was skipped (4), the store was away and
//! the points are in the spool (5), another run holds this host (6), stopped (130). Each
//! stage's error is classed here by its variant.

/// How a command failed: bad input (exit 2), a failure while doing the work (exit 1), or stopped
/// by SIGINT/SIGTERM after cleaning up (exit 130).
#[derive(Debug, thiserror::Error)]
pub enum Fail {
    #[error("{0}")]
    Input(String),
    #[error("{0}")]
    Run(String),
    #[error("{0}")]
    Interrupted(String),
    /// The command ran to its end and stored what it measured, but some points failed: exit 3,
    /// so a script notices the holes.
    #[error("{0}")]
    Partial(String),
    /// This host lacks what the experiment needs: nothing was run (exit 4), the host is skipped.
    #[error("{0}")]
    Skipped(String),
    /// The run finished, but the store could not take its points: they are in the spool (exit 5).
    #[error("{0}")]
    StoreAway(String),
    /// Another run holds this host (exit 6): try again when it has ended.
    #[error("{0}")]
    Busy(String),
}

impl Fail {
    /// The process's exit code for this failure.
    pub fn code(&self) -> i32 {
        match self {
            Fail::Run(_) => 1,
            Fail::Input(_) => 2,
            Fail::Partial(_) => PARTIAL,
            Fail::Skipped(_) => SKIPPED,
            Fail::StoreAway(_) => STORE_AWAY,
            Fail::Busy(_) => BUSY,
            Fail::Interrupted(_) => 130,
        }
    }
}

impl From<crate::fleet::Error> for Fail {
    fn from(e: crate::fleet::Error) -> Fail {
        use crate::fleet::Error;
        match e {
            Error::Input(m) => Fail::Input(m),
            Error::Busy(m) => Fail::Busy(m),
            Error::Store(e) => e.into(),
            e @ Error::Spool(_) => Fail::Run(e.to_string()),
        }
    }
}

pub type CmdResult = Result<(), Fail>;

/// Each stage's error decides the exit code by its variant: what was asked (2), stopped (130),
/// failed (1).
impl From<crate::lab::Error> for Fail {
    fn from(e: crate::lab::Error) -> Fail {
        use crate::lab::Error;
        match e {
            Error::Interrupted(m) => Fail::Interrupted(m),
            e if e.is_input() => Fail::Input(e.to_string()),
            e => Fail::Run(e.to_string()),
        }
    }
}

impl From<crate::engine::Error> for Fail {
    fn from(e: crate::engine::Error) -> Fail {
        use crate::engine::Error;
        match e {
            Error::Input(m) => Fail::Input(m),
            Error::Failed(m) => Fail::Run(m),
            Error::Io(e) => Fail::Run(e.to_string()),
            Error::Interrupted => Fail::Interrupted(e.to_string()),
        }
    }
}

impl From<crate::measure::Error> for Fail {
    fn from(e: crate::measure::Error) -> Fail {
        use crate::measure::Error;
        match e {
            Error::Input(m) => Fail::Input(m),
            Error::Lab(e) => e.into(),
            Error::Engine(e) => e.into(),
            e @ (Error::Failed(_) | Error::Meter(_)) => Fail::Run(e.to_string()),
        }
    }
}

impl From<crate::experiment::Error> for Fail {
    fn from(e: crate::experiment::Error) -> Fail {
        use crate::experiment::Error;
        match e {
            Error::Input(m) => Fail::Input(m),
            Error::Measure(e) => e.into(),
            Error::Lab(e) => e.into(),
            Error::Engine(e) => e.into(),
            Error::Store(e) => e.into(),
            e @ (Error::Failed(_) | Error::Meter(_)) => Fail::Run(e.to_string()),
        }
    }
}

impl From<crate::bench::Error> for Fail {
    fn from(e: crate::bench::Error) -> Fail {
        use crate::bench::Error;
        match e {
            Error::Input(m) => Fail::Input(m),
            Error::Lab(e) => e.into(),
            Error::Experiment(e) => e.into(),
            Error::Measure(e) => e.into(),
            Error::Store(e) => e.into(),
            e @ (Error::Failed(_)
            | Error::Host(_)
            | Error::Meter(_)
            | Error::Report(_)
            | Error::Hop(_)) => Fail::Run(e.to_string()),
        }
    }
}

/// Errors that are always about what the user wrote (exit 2).
macro_rules! input_errors {
    ($($t:ty),*) => {$(
        impl From<$t> for Fail {
            fn from(e: $t) -> Fail {
                Fail::Input(e.to_string())
            }
        }
    )*};
}
input_errors!(
    crate::units::Error,
    crate::vocab::Error,
    crate::text::Error,
    crate::stats::Error,
    crate::records::Error,
    crate::capacity::Error
);

impl From<crate::reproduce::Error> for Fail {
    fn from(e: crate::reproduce::Error) -> Fail {
        use crate::reproduce::Error;
        match e {
            Error::Input(m) => Fail::Input(m),
            Error::Interrupted(m) => Fail::Interrupted(m),
            Error::Failed(m) => Fail::Run(m),
            Error::Store(e) => e.into(),
            Error::Experiment(e) => e.into(),
            Error::Report(e) => e.into(),
        }
    }
}

/// Errors of work that failed on the host (exit 1).
macro_rules! run_errors {
    ($($t:ty),*) => {$(
        impl From<$t> for Fail {
            fn from(e: $t) -> Fail {
                Fail::Run(e.to_string())
            }
        }
    )*};
}
impl From<crate::vnic::Error> for Fail {
    fn from(e: crate::vnic::Error) -> Fail {
        match e {
            crate::vnic::Error::Input(m) => Fail::Input(m),
            e => Fail::Run(e.to_string()),
        }
    }
}

run_errors!(
    crate::guest::Error,
    crate::report::Error,
    crate::meter::Error,
    crate::lab::hostcmd::Error
);

impl From<crate::store::Error> for Fail {
    fn from(e: crate::store::Error) -> Fail {
        if e.is_bad_input() {
            Fail::Input(e.to_string())
        } else {
            Fail::Run(e.to_string())
        }
    }
}

/// The exit code of a run (or reproduce) that finished with failed points.
pub const PARTIAL: i32 = 3;
/// The exit code of a run this host cannot give what it needs: skipped, not failed.
pub const SKIPPED: i32 = 4;
/// The exit code of a run whose store was away: its points are in its spool.
pub const STORE_AWAY: i32 = 5;
/// The exit code of a run refused because another run holds the host.
pub const BUSY: i32 = 6;

#[cfg(test)]
mod tests {
    use super::Fail;

    fn code(f: Fail) -> &'static str {
        match f {
            Fail::Input(_) => "input",
            Fail::Run(_) => "run",
            Fail::Interrupted(_) => "interrupted",
            Fail::Partial(_) => "partial",
            Fail::Skipped(_) => "skipped",
            Fail::StoreAway(_) => "store away",
            Fail::Busy(_) => "busy",
        }
    }

    #[test]
    fn every_outcome_a_fleet_engine_acts_on_has_its_own_exit_code() {
        let all = [
            Fail::Run(String::new()),
            Fail::Input(String::new()),
            Fail::Partial(String::new()),
            Fail::Skipped(String::new()),
            Fail::StoreAway(String::new()),
            Fail::Busy(String::new()),
            Fail::Interrupted(String::new()),
        ];
        let codes: Vec<i32> = all.iter().map(Fail::code).collect();
        assert_eq!(codes, [1, 2, 3, 4, 5, 6, 130]);
        let busy = crate::fleet::Error::Busy("held".into());
        assert_eq!(Fail::from(busy).code(), 6);
        let bad = crate::fleet::Error::Input("bad".into());
        assert_eq!(Fail::from(bad).code(), 2);
    }

    #[test]
    fn the_exit_code_follows_the_error_variant_not_its_text() {
        let quantity = "9zbit".parse::<crate::units::Rate>().unwrap_err();
        assert!(matches!(quantity, crate::units::Error::Malformed { .. }));
        let lab = crate::lab::Error::from(quantity);
        assert_eq!(code(lab.into()), "input");
        let host = crate::lab::hostcmd::Error::Run("ip did not finish".into());
        assert_eq!(code(crate::lab::Error::from(host).into()), "run");
        let stopped = crate::experiment::Error::from(crate::engine::Error::Interrupted);
        assert_eq!(code(stopped.into()), "interrupted");
        let refused = crate::experiment::Error::from(crate::lab::Error::Input("x".into()));
        assert_eq!(code(refused.into()), "input");
        let bench = crate::bench::Error::from(crate::lab::Error::Failed("y".into()));
        assert_eq!(code(bench.into()), "run");
        // A failed build whose record cannot be read is reported as the user's input.
        assert!(crate::lab::Error::Failed("z".into()).as_input().is_input());
    }
}
