//! VDI session profiles: what one desktop's session sends (how often its screen changes by itself,
//! the most updates a second the protocol sends, update sizes, input rates, USB), read from TOML —
//! the built-in `profiles/vdi.toml` plus the user's own file — and checked into the plain
//! `VdiSpec` the agents run (and check again, as it arrives over a socket).

use crate::engine::Error;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::wire::MAX_FRAME;

/// The built-in profiles.
pub const BUILT_IN: &str = include_str!("../../../profiles/vdi.toml");

/// One desktop session's workload, as the agents run it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VdiSpec {
    pub profile: String,
    /// The desktop's own screen changes per second (a clock, an animation, a video's frames).
    pub activity_fps: f64,
    /// The most screen updates per second the protocol sends: changes closer together than
    /// `1 / max_fps` leave in one update.
    pub max_fps: f64,
    /// Update sizes in bytes with their weights.
    pub frame_bytes: Vec<(u32, f64)>,
    /// Key presses per second: each changes the screen (the typed text is drawn).
    pub keyboard_per_s: f64,
    /// Pointer moves per second: the client draws the pointer itself, so they change nothing.
    pub mouse_per_s: f64,
    /// Clicks per second: each changes the screen (a menu opens, a button redraws).
    pub clicks_per_s: f64,
    /// USB bulk redirection, bits/s each way (0: none).
    pub usb_bps: u64,
    /// Frames the engine lets go unacknowledged before it skips ticks.
    pub max_unacked: u32,
}

/// A profile as written in TOML.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    #[serde(alias = "fps")]
    activity_fps: f64,
    max_fps: Option<f64>,
    frame_bytes: Vec<(u32, f64)>,
    #[serde(default)]
    keyboard_per_s: f64,
    #[serde(default)]
    mouse_per_s: f64,
    #[serde(default)]
    clicks_per_s: f64,
    #[serde(default)]
    usb_mbit: f64,
    #[serde(default = "default_unacked")]
    max_unacked: u32,
}

fn default_unacked() -> u32 {
    3
}

/// The most frame sizes a profile lists.
const MAX_SIZES: usize = 64;

/// The update cap where a profile gives none: PCoIP's and Blast Extreme's default of 30 frames a
/// second (a profile whose own activity is faster, a 60 Hz video, is capped at its own rate).
pub const DEFAULT_MAX_FPS: f64 = 30.0;

impl VdiSpec {
    /// Checks every field against its bounds (a spec may come from a control connection).
    pub fn validate(&self) -> Result<(), Error> {
        let p = &self.profile;
        let bad = |what: String| Err(Error::Input(format!("VDI profile {p}: {what}")));
        if !(0.1..=240.0).contains(&self.activity_fps) {
            return bad(format!(
                "activity_fps {}: use 0.1 to 240",
                self.activity_fps
            ));
        }
        if !(self.activity_fps..=240.0).contains(&self.max_fps) {
            return bad(format!(
                "max_fps {}: use activity_fps ({}) to 240",
                self.max_fps, self.activity_fps
            ));
        }
        if self.frame_bytes.is_empty() || self.frame_bytes.len() > MAX_SIZES {
            return bad(format!(
                "frame_bytes: list 1 to {MAX_SIZES} [bytes, weight] pairs"
            ));
        }
        for &(b, w) in &self.frame_bytes {
            if !((1..=MAX_FRAME).contains(&b) && w > 0.0 && w <= 1e9) {
                return bad(format!(
                    "frame_bytes [{b}, {w}]: a frame has 1 byte to {} MB and a weight above 0",
                    MAX_FRAME >> 20
                ));
            }
        }
        for (name, r) in [
            ("keyboard_per_s", self.keyboard_per_s),
            ("mouse_per_s", self.mouse_per_s),
            ("clicks_per_s", self.clicks_per_s),
        ] {
            if !(0.0..=1000.0).contains(&r) {
                return bad(format!("{name} {r}: use 0 to 1000 events per second"));
            }
        }
        if self.usb_bps > 10_000_000_000 {
            return bad("usb_mbit: at most 10 000 (10 Gb/s)".into());
        }
        if !(1..=64).contains(&self.max_unacked) {
            return bad(format!("max_unacked {}: use 1 to 64", self.max_unacked));
        }
        Ok(())
    }

    /// The mean frame size, bytes.
    pub fn mean_frame(&self) -> f64 {
        let w: f64 = self.frame_bytes.iter().map(|x| x.1).sum();
        self.frame_bytes
            .iter()
            .map(|&(b, x)| b as f64 * x)
            .sum::<f64>()
            / w
    }

    /// Screen changes per second: the desktop's own and the input that changes it.
    pub fn changes_per_s(&self) -> f64 {
        self.activity_fps + self.keyboard_per_s + self.clicks_per_s
    }

    /// The updates a second the session asks for on average: every change, at most `max_fps`
    /// (changes closer together share an update, so this is an upper bound).
    pub fn mean_fps(&self) -> f64 {
        self.changes_per_s().min(self.max_fps)
    }

    /// The screen's mean rate, bits/s.
    pub fn screen_bps(&self) -> f64 {
        self.mean_frame() * self.mean_fps() * 8.0
    }

    /// Input events per second the client sends: keys, pointer moves and clicks.
    pub fn inputs_per_s(&self) -> f64 {
        self.keyboard_per_s + self.mouse_per_s + self.clicks_per_s
    }
}

/// Every profile in `text` (a TOML table per profile), checked; errors name file:line:column.
pub fn parse(text: &str, file: &str) -> Result<BTreeMap<String, VdiSpec>, Error> {
    let raw: BTreeMap<String, ProfileFile> =
        toml::from_str(text).map_err(|e| Error::Input(crate::text::toml_error(&e, text, file)))?;
    raw.into_iter()
        .map(|(name, p)| {
            let s = VdiSpec {
                profile: name.clone(),
                activity_fps: p.activity_fps,
                max_fps: p.max_fps.unwrap_or(DEFAULT_MAX_FPS.max(p.activity_fps)),
                frame_bytes: p.frame_bytes,
                keyboard_per_s: p.keyboard_per_s,
                mouse_per_s: p.mouse_per_s,
                clicks_per_s: p.clicks_per_s,
                usb_bps: if (0.0..=1e4).contains(&p.usb_mbit) {
                    (p.usb_mbit * 1e6) as u64
                } else {
                    u64::MAX
                },
                max_unacked: p.max_unacked,
            };
            s.validate()
                .map_err(|e| Error::Input(format!("{file}: {e}")))?;
            Ok((name, s))
        })
        .collect()
}

/// Profile `name` from the built-in ones and, if given, the user's file (`(text, file name)`),
/// whose profiles join or replace the built-in ones.
pub fn find(name: &str, user: Option<(&str, &str)>) -> Result<VdiSpec, Error> {
    let mut all = parse(BUILT_IN, "profiles/vdi.toml")?;
    if let Some((text, file)) = user {
        all.extend(parse(text, file)?);
    }
    all.get(name).cloned().ok_or_else(|| {
        Error::Input(format!(
            "no VDI profile named '{}': use one of {}",
            crate::text::clip(name),
            all.keys().cloned().collect::<Vec<_>>().join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_profiles_carry_the_papers_rates() {
        let all = parse(BUILT_IN, "vdi.toml").unwrap();
        let mbps = |n: &str| all[n].screen_bps() / 1e6;
        assert!((0.1..=0.3).contains(&mbps("office")), "{}", mbps("office"));
        assert!((0.3..=0.7).contains(&mbps("web")), "{}", mbps("web"));
        assert!((0.8..=1.2).contains(&mbps("video-rdp")));
        assert!((60.0..=62.0).contains(&mbps("video-1080p")));
        assert!((3900.0..=4000.0).contains(&mbps("raw-1080p60")));
        assert_eq!(all["idle"].inputs_per_s(), 0.0);
        assert_eq!(all["office"].max_unacked, 3);
        // Both rates are stated: the desktop's own and the cap; input adds changes below the cap.
        let o = &all["office"];
        assert_eq!(o.max_fps, 30.0);
        assert!(o.mean_fps() > o.activity_fps && o.mean_fps() < o.max_fps);
        assert_eq!(all["video-1080p"].mean_fps(), 30.0);
        assert_eq!(all["raw-1080p60"].max_fps, 60.0);
    }

    #[test]
    fn a_user_file_adds_profiles_and_errors_name_the_place() {
        let mine = "[cad]\nfps = 60\nframe_bytes = [[50000, 1]]\nusb_mbit = 100\n";
        let cad = find("cad", Some((mine, "mine.toml"))).unwrap();
        assert_eq!((cad.usb_bps, cad.max_unacked), (100_000_000, 3));
        assert!(find("office", Some((mine, "mine.toml"))).is_ok());
        let e = find("nope", None).unwrap_err().to_string();
        assert!(e.contains("office") && e.contains("video-1080p"), "{e}");
        let typo = "[x]\nfps = 30\nframe_bytes = [[1, 1]]\nfsp = 3\n";
        let e = parse(typo, "mine.toml").unwrap_err().to_string();
        assert!(e.starts_with("mine.toml:4:1:"), "{e}");
        let zero = "[x]\nfps = 0\nframe_bytes = [[1, 1]]\n";
        let e = parse(zero, "mine.toml").unwrap_err().to_string();
        assert!(e.contains("activity_fps 0"), "{e}");
        let capped = "[x]\nactivity_fps = 20\nmax_fps = 10\nframe_bytes = [[1, 1]]\n";
        let e = parse(capped, "mine.toml").unwrap_err().to_string();
        assert!(e.contains("max_fps 10: use activity_fps (20)"), "{e}");
        let fast = parse("[x]\nfps = 50\nframe_bytes = [[1, 1]]\n", "m").unwrap();
        assert_eq!(fast["x"].max_fps, 50.0);
        let huge = "[x]\nfps = 1\nframe_bytes = [[4000000000, 1]]\n";
        assert!(parse(huge, "m").is_err());
        let no_weight = "[x]\nfps = 1\nframe_bytes = [[100, 0]]\n";
        assert!(parse(no_weight, "m").is_err());
        let usb = "[x]\nfps = 1\nframe_bytes = [[100, 1]]\nusb_mbit = 1e30\n";
        assert!(parse(usb, "m").is_err());
    }
}
