// Package safefile writes a file the way a process running as root must:
// to what the user named, never over it. A regular file, or a name that
// does not exist yet, is replaced atomically (a temporary file beside it,
// fsync, rename, fsync of the directory), so a reader never sees half a
// document. Anything else is not nodegc's to replace: a character or block
// device and a FIFO are opened for writing and written in place (so `-o
// /dev/null` discards, as it does in a shell), and a symlink is refused,
// since renaming over it would replace the link and following it would let
// whoever made the link choose what root writes.
package safefile
