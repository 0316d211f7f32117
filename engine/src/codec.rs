//! Little-endian encoding helpers shared by every on-disk format.
//!
//! [`ByteReader`] is the only way a parser in this crate looks at untrusted
//! bytes: every read checks the remaining length first and fails with the
//! absolute offset of the problem, so no parser can panic on a short input
//! or allocate from a length it has not checked against the bytes it holds.

/// Why a run of bytes did not decode, and where (absolute offset).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Absolute offset in the file of the first byte that did not decode.
    pub offset_bytes: u64,
    /// What was wrong.
    pub reason: &'static str,
}

impl DecodeError {
    /// The engine error for this problem in `file`.
    pub fn in_file(self, file: impl Into<std::path::PathBuf>) -> crate::Error {
        crate::Error::corrupt(file, self.offset_bytes, self.reason)
    }
}

/// A cursor over untrusted bytes that reports absolute file offsets.
#[derive(Clone, Debug)]
pub struct ByteReader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// The file offset of `bytes[0]`.
    base_offset_bytes: u64,
}

impl<'a> ByteReader<'a> {
    /// Read `bytes`, which start at `base_offset_bytes` in their file.
    pub fn new(bytes: &'a [u8], base_offset_bytes: u64) -> Self {
        Self { bytes, pos: 0, base_offset_bytes }
    }

    /// The absolute offset of the next byte.
    pub fn offset_bytes(&self) -> u64 {
        self.base_offset_bytes + self.pos as u64
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// A [`DecodeError`] at the current position.
    pub fn error(&self, reason: &'static str) -> DecodeError {
        DecodeError { offset_bytes: self.offset_bytes(), reason }
    }

    /// The next `len` bytes, or an error if fewer remain.
    pub fn bytes(&mut self, len: usize) -> Result<&'a [u8], DecodeError> {
        if len > self.remaining() {
            return Err(self.error("length runs past the end of the data"));
        }
        let out = &self.bytes[self.pos..self.pos + len];
        self.pos += len;
        Ok(out)
    }

    /// The next byte.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.bytes(1)?[0])
    }

    /// The next little-endian u32.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The next little-endian u64.
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        let b = self.bytes(8)?;
        Ok(u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    /// A u32 length followed by that many bytes. The length is checked
    /// against what remains before anything is sliced or allocated.
    pub fn len_prefixed(&mut self) -> Result<&'a [u8], DecodeError> {
        let at = self.offset_bytes();
        let len = self.u32()? as usize;
        if len > self.remaining() {
            return Err(DecodeError { offset_bytes: at, reason: "length prefix runs past the end" });
        }
        self.bytes(len)
    }

    /// Fail unless every byte was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.remaining() == 0 {
            Ok(())
        } else {
            Err(self.error("trailing bytes after the record"))
        }
    }
}

/// Append a little-endian u32.
pub fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// Append a little-endian u64.
pub fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// Append a u32 length and then `bytes`. Panics only if `bytes` is over
/// 4 GiB, which callers bound long before (frame and key limits).
pub fn put_len_prefixed(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).expect("field over 4 GiB: callers bound lengths");
    put_u32(out, len);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn short_input_reports_the_absolute_offset() {
        let mut r = ByteReader::new(&[1, 2, 3], 100);
        assert_eq!(r.u8(), Ok(1));
        let err = r.u32().unwrap_err();
        assert_eq!(err.offset_bytes, 101);
    }

    #[test]
    fn len_prefix_is_checked_before_slicing() {
        let mut bytes = Vec::new();
        put_u32(&mut bytes, u32::MAX);
        bytes.extend_from_slice(b"abc");
        let mut r = ByteReader::new(&bytes, 0);
        let err = r.len_prefixed().unwrap_err();
        assert_eq!(err.offset_bytes, 0);
        assert_eq!(err.reason, "length prefix runs past the end");
    }

    proptest! {
        #[test]
        fn round_trip(a in any::<u32>(), b in any::<u64>(), s in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut out = Vec::new();
            put_u32(&mut out, a);
            put_u64(&mut out, b);
            put_len_prefixed(&mut out, &s);
            let mut r = ByteReader::new(&out, 0);
            prop_assert_eq!(r.u32().unwrap(), a);
            prop_assert_eq!(r.u64().unwrap(), b);
            prop_assert_eq!(r.len_prefixed().unwrap(), &s[..]);
            prop_assert!(r.finish().is_ok());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut r = ByteReader::new(&bytes, 0);
            while r.len_prefixed().is_ok() {}
        }
    }
}
