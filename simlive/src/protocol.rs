//! The wire between a preloaded program (`stdfs-preload`) and `sim live`,
//! which holds the seed's simulated disk: one request, one answer, each a
//! frame (`u32` length, little-endian, then the body). A request is one
//! `Vfs` or `VfsFile` call of the layer's disk (`vfs/src/lib.rs`), so the
//! layer's libc semantics (descriptors, cursors, `O_APPEND`) stay in the
//! program's process and only the disk's calls cross; an answer is the
//! call's value or its error as an `errno` and a message.
//!
//! Decoding refuses, with a typed error naming the field, anything short,
//! long or unknown: the two ends are built from one source, and a frame
//! that does not parse is a bug to see, never a call to guess at.

use std::io::{self, Read, Write};

/// Largest frame either end accepts (a write of the program is one frame).
pub const MAX_FRAME_BYTES: u32 = 256 << 20;

/// One call of the disk, or the program's word about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// The first frame of a connection: the process's real pid and its
    /// parent's (to answer its simulated ones) and what it runs
    /// (`argv[0]`). Answered with `Value::Hello`.
    Hello {
        pid: u32,
        ppid: u32,
        program: Vec<u8>,
    },
    Open {
        path: Vec<u8>,
        mode: u8,
    },
    Rename {
        from: Vec<u8>,
        to: Vec<u8>,
    },
    Unlink {
        path: Vec<u8>,
    },
    ListDir {
        dir: Vec<u8>,
    },
    /// `Vfs::list_subdirs`: no I/O of the disk's own (it rides with the
    /// `ListDir` before it).
    ListSubdirs {
        dir: Vec<u8>,
    },
    CreateDirAll {
        dir: Vec<u8>,
    },
    SyncDir {
        dir: Vec<u8>,
    },
    Exists {
        path: Vec<u8>,
    },
    ReadAt {
        handle: u64,
        offset: u64,
        len: u32,
    },
    WriteAt {
        handle: u64,
        offset: u64,
        data: Vec<u8>,
    },
    SetLen {
        handle: u64,
        len: u64,
    },
    Len {
        handle: u64,
    },
    Sync {
        handle: u64,
    },
    SyncData {
        handle: u64,
    },
    Close {
        handle: u64,
    },
    /// Something the layer refused in the program (the run fails for it).
    Refused {
        what: Vec<u8>,
    },
    /// `Vfs::remove_dir`: `rmdir` of an empty directory.
    RemoveDir {
        dir: Vec<u8>,
    },
}

/// A successful answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Unit,
    /// The connection's process number (0 for the first process to connect),
    /// the seed its randomness and clock are drawn from, and the pids
    /// `getpid` and `getppid` answer.
    Hello {
        ordinal: u64,
        entropy_seed: u64,
        pid: u32,
        ppid: u32,
    },
    Handle(u64),
    Bool(bool),
    U64(u64),
    Bytes(Vec<u8>),
    Names(Vec<Vec<u8>>),
}

/// An answer: the value, or the error as `errno` and the disk's message.
pub type Answer = Result<Value, (i32, String)>;

/// The open modes of `vfs::OpenMode`, by number.
pub const MODES: [vfs::OpenMode; 4] =
    [vfs::OpenMode::Read, vfs::OpenMode::Write, vfs::OpenMode::Create, vfs::OpenMode::Truncate];

/// A frame that does not parse: what was wrong and where.
#[derive(Debug)]
pub struct BadFrame(pub String);

impl std::fmt::Display for BadFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bad frame: {}", self.0)
    }
}

struct Out(Vec<u8>);

impl Out {
    fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(&mut self, v: &[u8]) -> &mut Self {
        let len = u32::try_from(v.len()).expect("a field fits a frame");
        self.0.extend_from_slice(&len.to_le_bytes());
        self.0.extend_from_slice(v);
        self
    }
}

struct In<'a> {
    rest: &'a [u8],
    what: &'static str,
}

impl<'a> In<'a> {
    fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8], BadFrame> {
        if self.rest.len() < n {
            return Err(BadFrame(format!("{}: {field} cut short ({} of {n} bytes)", self.what, self.rest.len())));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }
    fn u8(&mut self, field: &str) -> Result<u8, BadFrame> {
        Ok(self.take(1, field)?[0])
    }
    fn u64(&mut self, field: &str) -> Result<u64, BadFrame> {
        Ok(u64::from_le_bytes(self.take(8, field)?.try_into().expect("eight bytes")))
    }
    fn u32(&mut self, field: &str) -> Result<u32, BadFrame> {
        Ok(u32::from_le_bytes(self.take(4, field)?.try_into().expect("four bytes")))
    }
    fn bytes(&mut self, field: &str) -> Result<Vec<u8>, BadFrame> {
        let len = self.u32(field)? as usize;
        Ok(self.take(len, field)?.to_vec())
    }
    fn end(self) -> Result<(), BadFrame> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(BadFrame(format!("{}: {} bytes past its end", self.what, self.rest.len())))
        }
    }
}

impl Request {
    /// One line naming the call (`--show-ios`).
    pub fn summary(&self) -> String {
        let p = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match self {
            Request::Hello { pid, ppid, program } => format!("(process {pid} of {ppid} {} connects)", p(program)),
            Request::Open { path, mode } => format!("open {} {:?}", p(path), MODES.get(usize::from(*mode))),
            Request::Rename { from, to } => format!("rename {} {}", p(from), p(to)),
            Request::Unlink { path } => format!("unlink {}", p(path)),
            Request::ListDir { dir } => format!("list {}", p(dir)),
            Request::CreateDirAll { dir } => format!("mkdir {}", p(dir)),
            Request::SyncDir { dir } => format!("fsync directory {}", p(dir)),
            Request::Exists { path } => format!("exists {}", p(path)),
            Request::ReadAt { handle, offset, len } => format!("read h{handle} {offset}+{len}"),
            Request::WriteAt { handle, offset, data } => format!("write h{handle} {offset}+{}", data.len()),
            Request::SetLen { handle, len } => format!("set_len h{handle} {len}"),
            Request::Len { handle } => format!("len h{handle}"),
            Request::Sync { handle } => format!("fsync h{handle}"),
            Request::SyncData { handle } => format!("fdatasync h{handle}"),
            Request::Close { handle } => format!("(close h{handle})"),
            Request::Refused { what } => format!("(refused: {})", p(what)),
            Request::ListSubdirs { dir } => format!("(list directories {})", p(dir)),
            Request::RemoveDir { dir } => format!("rmdir {}", p(dir)),
        }
    }

    /// The frame's body.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Out(Vec::new());
        match self {
            Request::Hello { pid, ppid, program } => o.u8(0).u64(u64::from(*pid)).u64(u64::from(*ppid)).bytes(program),
            Request::Open { path, mode } => o.u8(1).bytes(path).u8(*mode),
            Request::Rename { from, to } => o.u8(2).bytes(from).bytes(to),
            Request::Unlink { path } => o.u8(3).bytes(path),
            Request::ListDir { dir } => o.u8(4).bytes(dir),
            Request::CreateDirAll { dir } => o.u8(5).bytes(dir),
            Request::SyncDir { dir } => o.u8(6).bytes(dir),
            Request::Exists { path } => o.u8(7).bytes(path),
            Request::ReadAt { handle, offset, len } => o.u8(8).u64(*handle).u64(*offset).u64(u64::from(*len)),
            Request::WriteAt { handle, offset, data } => o.u8(9).u64(*handle).u64(*offset).bytes(data),
            Request::SetLen { handle, len } => o.u8(10).u64(*handle).u64(*len),
            Request::Len { handle } => o.u8(11).u64(*handle),
            Request::Sync { handle } => o.u8(12).u64(*handle),
            Request::SyncData { handle } => o.u8(13).u64(*handle),
            Request::Close { handle } => o.u8(14).u64(*handle),
            Request::Refused { what } => o.u8(15).bytes(what),
            Request::ListSubdirs { dir } => o.u8(16).bytes(dir),
            Request::RemoveDir { dir } => o.u8(17).bytes(dir),
        };
        o.0
    }

    /// The request a frame's body holds.
    pub fn decode(body: &[u8]) -> Result<Request, BadFrame> {
        let mut i = In { rest: body, what: "request" };
        let tag = i.u8("tag")?;
        let request = match tag {
            0 => {
                Request::Hello { pid: i.u64("pid")? as u32, ppid: i.u64("ppid")? as u32, program: i.bytes("program")? }
            }
            1 => Request::Open { path: i.bytes("path")?, mode: i.u8("mode")? },
            2 => Request::Rename { from: i.bytes("from")?, to: i.bytes("to")? },
            3 => Request::Unlink { path: i.bytes("path")? },
            4 => Request::ListDir { dir: i.bytes("dir")? },
            5 => Request::CreateDirAll { dir: i.bytes("dir")? },
            6 => Request::SyncDir { dir: i.bytes("dir")? },
            7 => Request::Exists { path: i.bytes("path")? },
            8 => {
                let (handle, offset) = (i.u64("handle")?, i.u64("offset")?);
                let len = u32::try_from(i.u64("len")?).map_err(|_| BadFrame("request: read len over 4 GiB".into()))?;
                Request::ReadAt { handle, offset, len }
            }
            9 => Request::WriteAt { handle: i.u64("handle")?, offset: i.u64("offset")?, data: i.bytes("data")? },
            10 => Request::SetLen { handle: i.u64("handle")?, len: i.u64("len")? },
            11 => Request::Len { handle: i.u64("handle")? },
            12 => Request::Sync { handle: i.u64("handle")? },
            13 => Request::SyncData { handle: i.u64("handle")? },
            14 => Request::Close { handle: i.u64("handle")? },
            15 => Request::Refused { what: i.bytes("what")? },
            16 => Request::ListSubdirs { dir: i.bytes("dir")? },
            17 => Request::RemoveDir { dir: i.bytes("dir")? },
            other => return Err(BadFrame(format!("request: unknown tag {other}"))),
        };
        i.end()?;
        Ok(request)
    }
}

/// An answer's frame body.
pub fn encode_answer(answer: &Answer) -> Vec<u8> {
    let mut o = Out(Vec::new());
    match answer {
        Err((errno, message)) => o.u8(0).u64(*errno as u32 as u64).bytes(message.as_bytes()),
        Ok(Value::Unit) => o.u8(1),
        Ok(Value::Hello { ordinal, entropy_seed, pid, ppid }) => {
            o.u8(2).u64(*ordinal).u64(*entropy_seed).u64(u64::from(*pid)).u64(u64::from(*ppid))
        }
        Ok(Value::Handle(h)) => o.u8(3).u64(*h),
        Ok(Value::Bool(b)) => o.u8(4).u8(u8::from(*b)),
        Ok(Value::U64(v)) => o.u8(5).u64(*v),
        Ok(Value::Bytes(b)) => o.u8(6).bytes(b),
        Ok(Value::Names(names)) => {
            o.u8(7).u64(names.len() as u64);
            for name in names {
                o.bytes(name);
            }
            &mut o
        }
    };
    o.0
}

/// The answer a frame's body holds.
pub fn decode_answer(body: &[u8]) -> Result<Answer, BadFrame> {
    let mut i = In { rest: body, what: "answer" };
    let answer = match i.u8("tag")? {
        0 => {
            let errno = i.u64("errno")? as u32 as i32;
            Err((errno, String::from_utf8_lossy(&i.bytes("message")?).into_owned()))
        }
        1 => Ok(Value::Unit),
        2 => Ok(Value::Hello {
            ordinal: i.u64("ordinal")?,
            entropy_seed: i.u64("entropy seed")?,
            pid: i.u64("pid")? as u32,
            ppid: i.u64("ppid")? as u32,
        }),
        3 => Ok(Value::Handle(i.u64("handle")?)),
        4 => Ok(Value::Bool(i.u8("bool")? != 0)),
        5 => Ok(Value::U64(i.u64("value")?)),
        6 => Ok(Value::Bytes(i.bytes("bytes")?)),
        7 => {
            let count = i.u64("count")?;
            let mut names = Vec::new();
            for _ in 0..count {
                names.push(i.bytes("name")?);
            }
            Ok(Value::Names(names))
        }
        other => return Err(BadFrame(format!("answer: unknown tag {other}"))),
    };
    i.end()?;
    Ok(answer)
}

/// Write one frame.
pub fn write_frame(out: &mut impl Write, body: &[u8]) -> io::Result<()> {
    let len = u32::try_from(body.len()).ok().filter(|&n| n <= MAX_FRAME_BYTES);
    let len = len.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "frame over MAX_FRAME_BYTES"))?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_le_bytes());
    frame.extend_from_slice(body);
    out.write_all(&frame)
}

/// Read one frame; `Ok(None)` at a clean end of stream (the peer gone).
pub fn read_frame(input: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len);
    if len > MAX_FRAME_BYTES {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("frame of {len} bytes over the limit")));
    }
    let mut body = vec![0u8; len as usize];
    input.read_exact(&mut body)?;
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_and_answer_decodes_to_itself() {
        let requests = [
            Request::Hello { pid: 7, ppid: 6, program: b"sqlite3".to_vec() },
            Request::Open { path: b"/db".to_vec(), mode: 2 },
            Request::Rename { from: b"/a".to_vec(), to: b"/b".to_vec() },
            Request::ReadAt { handle: 3, offset: 4096, len: 512 },
            Request::WriteAt { handle: 3, offset: 9, data: vec![0, 1, 255] },
            Request::Refused { what: b"fork".to_vec() },
            Request::ListSubdirs { dir: b"/.git".to_vec() },
            Request::RemoveDir { dir: b"/.git/refs/tmp".to_vec() },
        ];
        for r in requests {
            assert_eq!(Request::decode(&r.encode()).unwrap(), r);
        }
        let answers: [Answer; 4] = [
            Ok(Value::Names(vec![b"a".to_vec(), Vec::new()])),
            Ok(Value::Hello { ordinal: 2, entropy_seed: u64::MAX, pid: 10_002, ppid: 10_001 }),
            Err((libc::ENOSPC, "full".into())),
            Ok(Value::Bytes(b"xyz".to_vec())),
        ];
        for a in answers {
            assert_eq!(decode_answer(&encode_answer(&a)).unwrap(), a);
        }
    }

    #[test]
    fn a_cut_or_padded_frame_is_refused_naming_the_field() {
        let body = Request::Rename { from: b"/a".to_vec(), to: b"/b".to_vec() }.encode();
        let cut = Request::decode(&body[..body.len() - 1]).unwrap_err();
        assert!(cut.0.contains("to cut short"), "{}", cut.0);
        let mut padded = body.clone();
        padded.push(0);
        assert!(Request::decode(&padded).unwrap_err().0.contains("past its end"));
        assert!(Request::decode(&[99]).unwrap_err().0.contains("unknown tag 99"));
    }
}
