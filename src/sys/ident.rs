//! Objects known by identity, not by name: a network namespace made as `ip netns add` makes one
//! but atomically (its name's file made with O_EXCL, so a name someone else holds is never taken
//! over) and returning the new namespace's identity (nsfs device and inode); namespaces and
//! folders opened and checked against the identity recorded when they were made, so that deleting,
//! entering or writing into one acts on that object or on nothing.

use serde::{Deserialize, Serialize};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// What a file, folder or namespace is, whatever it is called: its device and inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

impl std::fmt::Display for FileId {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}:{}", self.dev, self.ino)
    }
}

/// Where named network namespaces live.
pub const NETNS_DIR: &str = "/run/netns";

fn cstr(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::ErrorKind::InvalidInput.into())
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn id_of_stat(st: &libc::stat) -> FileId {
    FileId {
        dev: st.st_dev,
        ino: st.st_ino,
    }
}

/// The identity of what `path` names now (following a bind mount, as the kernel does).
pub fn id_of(path: &Path) -> io::Result<FileId> {
    let c = cstr(path)?;
    // SAFETY: an all-zero stat is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` a stat the kernel fills; both outlive the call.
    check(unsafe { libc::stat(c.as_ptr(), &mut st) })?;
    Ok(id_of_stat(&st))
}

/// The identity of an open file.
pub fn id_of_fd(fd: &OwnedFd) -> io::Result<FileId> {
    // SAFETY: an all-zero stat is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open for the call and `st` a stat the kernel fills.
    check(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(id_of_stat(&st))
}

/// Opens `path` with `flags` (O_CLOEXEC added).
fn open(path: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = cstr(path)?;
    // SAFETY: `c` is NUL-terminated and outlives the call; open returns a new fd or -1.
    let fd = check(unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) })?;
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Not the object recorded: a one-line reason naming it.
fn not_it(what: &Path, want: FileId, have: FileId) -> io::Error {
    io::Error::other(format!(
        "{} is {have}, not {want}, the one recorded when it was made",
        what.display()
    ))
}

/// Opens what `path` names and checks it is `want` (a namespace or folder recorded when made).
pub fn open_checked(path: &Path, flags: libc::c_int, want: FileId) -> io::Result<OwnedFd> {
    let fd = open(path, flags)?;
    match id_of_fd(&fd)? {
        have if have == want => Ok(fd),
        have => Err(not_it(path, want, have)),
    }
}

/// Opens folder `path` (not through a symlink at its end) and checks it is `want`.
pub fn open_dir_checked(path: &Path, want: FileId) -> io::Result<OwnedFd> {
    open_checked(
        path,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        want,
    )
}

/// Opens `name` inside the open folder `dir`, never through a symlink, with `flags`.
pub fn open_at(dir: &OwnedFd, name: &str, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `dir` is open, `c` NUL-terminated; both outlive the call.
    let fd = check(unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    })?;
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Makes `dir` a folder that is its own shared mount point, as `ip netns add` does, so that a
/// namespace's bind mount propagates to every mount namespace and unmounts with it.
fn prepare_netns_dir(dir: &Path) -> io::Result<()> {
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let c = cstr(dir)?;
    let none = c"none";
    let shared = || {
        // SAFETY: every pointer is a NUL-terminated string living across the call (or null).
        unsafe {
            libc::mount(
                c"".as_ptr(),
                c.as_ptr(),
                none.as_ptr(),
                libc::MS_SHARED | libc::MS_REC,
                std::ptr::null(),
            )
        }
    };
    if shared() == 0 {
        return Ok(());
    }
    if io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
        return Err(io::Error::last_os_error());
    }
    // Not a mount point yet: bind it on itself, then share it.
    // SAFETY: as above.
    check(unsafe {
        libc::mount(
            c.as_ptr(),
            c.as_ptr(),
            none.as_ptr(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    })?;
    check(shared()).map(|_| ())
}

/// Makes network namespace `name` under `NETNS_DIR`; false if the name is taken (by another lab,
/// another state folder, another program): the name's file is made with O_EXCL first, so what
/// exists is never touched. The namespace is made by a thread of its own, which reads its
/// identity from inside and hands it to `made` (to be journaled) before binding it to the name:
/// a crash before the bind leaves only the empty name file, and the namespace goes with the thread.
pub fn make_netns(
    name: &str,
    made: impl FnOnce(FileId, Option<u64>) -> io::Result<()> + Send,
) -> io::Result<bool> {
    let dir = Path::new(NETNS_DIR);
    prepare_netns_dir(dir)?;
    let path = dir.join(name);
    match open(&path, libc::O_RDONLY | libc::O_CREAT | libc::O_EXCL) {
        Ok(fd) => drop(fd),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(e),
    }
    let target = path.clone();
    let bound = std::thread::scope(|s| {
        s.spawn(move || -> io::Result<()> {
            // SAFETY: unshare takes a flag; it moves only this thread into a new namespace.
            check(unsafe { libc::unshare(libc::CLONE_NEWNET) })?;
            let own = Path::new("/proc/thread-self/ns/net");
            made(id_of(own)?, own_netns_cookie()?)?;
            let (src, dst) = (cstr(own)?, cstr(&target)?);
            // SAFETY: both paths are NUL-terminated strings living across the call.
            check(unsafe {
                libc::mount(
                    src.as_ptr(),
                    dst.as_ptr(),
                    c"none".as_ptr(),
                    libc::MS_BIND,
                    std::ptr::null(),
                )
            })
            .map(|_| ())
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the namespace's thread panicked")))
    });
    match bound {
        Ok(()) => Ok(true),
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            Err(e)
        }
    }
}

/// What deleting a namespace found.
#[derive(Debug, PartialEq)]
pub enum Deleted {
    /// The namespace of that identity, unmounted and its name removed.
    Ours,
    /// Nothing by that name.
    Gone,
    /// The empty file a make that was cut short left behind (no namespace bound to it).
    Placeholder,
}

/// Deletes namespace `name` if it is `want` with cookie `cookie` (as `ip netns del` does: lazy
/// unmount, then the name's file); an empty placeholder file a cut-short make left is removed
/// too. Anything else by that name is refused with why, and left as it is.
pub fn del_netns(name: &str, want: FileId, cookie: Option<u64>) -> io::Result<Deleted> {
    let path = Path::new(NETNS_DIR).join(name);
    let have = match id_of(&path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Deleted::Gone),
        r => r?,
    };
    if have != want {
        let m = std::fs::symlink_metadata(&path)?;
        let dir = id_of(Path::new(NETNS_DIR))?;
        // A plain empty file on the folder's own file system: no namespace is bound to it.
        if m.file_type().is_file() && m.len() == 0 && have.dev == dir.dev {
            std::fs::remove_file(&path)?;
            return Ok(Deleted::Placeholder);
        }
        return Err(not_it(&path, want, have));
    }
    check_cookie(&open(&path, libc::O_RDONLY)?, name, cookie)?;
    let c = cstr(&path)?;
    // SAFETY: `c` is a NUL-terminated path living across the call.
    check(unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) })?;
    std::fs::remove_file(&path)?;
    Ok(Deleted::Ours)
}

/// Opens namespace `name` and checks it is `want` with cookie `cookie`, for entering it (setns
/// on the fd checked) or holding it (a namespace held open is never freed, so its inode is no
/// other's while the fd lives).
pub fn open_netns(name: &str, want: FileId, cookie: Option<u64>) -> io::Result<OwnedFd> {
    let fd = open_checked(&Path::new(NETNS_DIR).join(name), libc::O_RDONLY, want)?;
    check_cookie(&fd, name, cookie)?;
    Ok(fd)
}

/// SO_NETNS_COOKIE (asm-generic/socket.h, Linux 5.14).
const SO_NETNS_COOKIE: libc::c_int = 71;

/// The cookie of the calling thread's network namespace: a number the kernel gives one namespace
/// for its whole life and never gives another (an inode it reuses at once); None on a kernel
/// before 5.14, which has none.
pub fn own_netns_cookie() -> io::Result<Option<u64>> {
    // SAFETY: socket takes plain integers and returns a new fd or -1.
    let fd =
        check(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` was just made and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut cookie: u64 = 0;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: `cookie` and `len` are valid for writes of the sizes given, for the call.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_NETNS_COOKIE,
            (&mut cookie as *mut u64).cast(),
            &mut len,
        )
    };
    match r {
        0 => Ok(Some(cookie)),
        _ if io::Error::last_os_error().raw_os_error() == Some(libc::ENOPROTOOPT) => Ok(None),
        _ => Err(io::Error::last_os_error()),
    }
}

/// The cookie of the namespace open as `fd`, read by a thread that enters it.
pub fn netns_cookie(fd: &OwnedFd) -> io::Result<Option<u64>> {
    std::thread::scope(|s| {
        s.spawn(|| {
            enter_netns_fd(fd)?;
            own_netns_cookie()
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the cookie's thread panicked")))
    })
}

/// Checks an open namespace against the cookie recorded when it was made (None: made on a
/// kernel without cookies, known by its inode alone).
pub fn check_cookie(fd: &OwnedFd, name: &str, want: Option<u64>) -> io::Result<()> {
    let Some(want) = want else {
        return Ok(());
    };
    match netns_cookie(fd)? {
        Some(have) if have == want => Ok(()),
        Some(_) => Err(io::Error::other(format!(
            "namespace {name} has the inode recorded but not the cookie: it is another namespace that the kernel gave the same inode"
        ))),
        None => Err(io::Error::other(format!(
            "namespace {name} was recorded with a cookie this kernel cannot read"
        ))),
    }
}

/// Moves the calling thread into the namespace open as `fd`.
pub fn enter_netns_fd(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: `fd` is an open namespace file for the call; setns reads only the fd.
    check(unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) }).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_known_by_its_identity_and_another_of_its_name_is_not_it() {
        let dir = std::env::temp_dir().join(format!("vlident{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x");
        std::fs::write(&p, "one").unwrap();
        let id = id_of(&p).unwrap();
        assert!(open_checked(&p, libc::O_RDONLY, id).is_ok());
        // Replaced under the same name (the old one kept alive elsewhere, so its inode is not
        // simply reused): not the object recorded.
        let keep = dir.join("keep");
        let _ = std::fs::remove_file(&keep);
        std::fs::hard_link(&p, &keep).unwrap();
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, "two").unwrap();
        let e = open_checked(&p, libc::O_RDONLY, id).unwrap_err();
        assert!(e.to_string().contains("not"), "{e}");
        // A symlink at the end of a folder's path is refused.
        let d = dir.join("d");
        std::fs::create_dir_all(&d).unwrap();
        let did = id_of(&d).unwrap();
        let link = dir.join("l");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert!(open_dir_checked(&d, did).is_ok());
        assert!(open_dir_checked(&link, did).is_err());
        let fd = open_dir_checked(&d, did).unwrap();
        std::fs::write(d.join("f"), "x").unwrap();
        std::os::unix::fs::symlink(&p, d.join("s")).unwrap();
        assert!(open_at(&fd, "f", libc::O_RDONLY).is_ok());
        assert!(
            open_at(&fd, "s", libc::O_RDONLY).is_err(),
            "never through a symlink"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
