//! Native: no guests to speak of. The application runs on the host's end of the wire, the
//! baseline every other datapath is measured against.

use super::seam::Datapath;
use crate::vocab::Mode;

pub struct Native;

impl Datapath for Native {
    fn mode(&self) -> Mode {
        Mode::Native
    }
    fn about(&self) -> &'static str {
        "no guest: the application runs on the host's end of the wire (the baseline)"
    }
    fn guest_namespaces(&self) -> bool {
        false
    }
}
