// PartFile: the `{destination}.part` a download writes, opened so that nothing planted in the cache folder
// can redirect the writes, and locked so that one download at a time writes it.
//
// The name is predictable and the folder may be shared, so the file is opened without following a
// symbolic link (O_NOFOLLOW) and without blocking on a FIFO (O_NONBLOCK), and must then be a regular file
// of this user: anything else is refused, never truncated. The lock is a flock on the open file; a process
// that opened the .part just before another renamed it to the destination would lock the finished file,
// so after locking, the descriptor and the path must still name the same file (else the .part is opened
// again). Under the lock the download then checks whether the destination is already complete.
import Glibc
import LeapCore

package enum PartFile {
    /// Opens (creating, mode 0600) and locks the .part at `path`. Errors: `.busy` (another download holds
    /// the lock), `.io` (a link, not a regular file, another user's file, or it cannot be created).
    package static func openLocked(_ path: String, destination: String) throws -> Int32 {
        // Each round either locks the file at the path or saw that path change under it; a path that keeps
        // changing belongs to another process cycling downloads, reported as busy.
        for _ in 0..<8 {
            let fd = try openChecked(path)
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
                close(fd)
                throw LeapError(.busy, "'\(destination)' is being downloaded by another thread or process (its .part file is locked)")
            }
            if isCurrent(fd, path: path) { return fd }
            close(fd)
        }
        throw LeapError(.busy, "'\(destination)' is being downloaded by another process (its .part file keeps being replaced)")
    }

    /// The .part opened for writing without following a link, checked to be a regular file of this user.
    package static func openChecked(_ path: String) throws -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == ELOOP {
                throw LeapError.io("'\(path)' is a symbolic link; a download never writes through one (remove it)")
            }
            throw LeapError.io("cannot create '\(path)': \(errnoText())")
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let text = errnoText()
            close(fd)
            throw LeapError.io("cannot read the status of '\(path)': \(text)")
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            throw LeapError.io("'\(path)' is not a regular file; a download only writes its own .part files (remove it)")
        }
        guard st.st_uid == geteuid() else {
            close(fd)
            throw LeapError.io("'\(path)' belongs to another user (uid \(st.st_uid)); a download only writes its own .part files")
        }
        // Back to blocking writes (O_NONBLOCK was for the open alone).
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        return fd
    }

    /// True when `path` names the file open as `fd` (a locked descriptor of a file since renamed or
    /// deleted is not the .part any more).
    package static func isCurrent(_ fd: Int32, path: String) -> Bool {
        var open = stat(), named = stat()
        guard fstat(fd, &open) == 0, lstat(path, &named) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }
}
