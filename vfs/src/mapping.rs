//! [`Mapping`]: a read-only view of an immutable file's bytes.
//!
//! On a real disk it is a memory map; in the simulator or a test it is a
//! copy in memory. The engine only sees `&[u8]`, so segment readers are the
//! same code over both, and a fuzz target can hand a reader any bytes.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// Shared, cheaply cloned, read-only bytes of one file.
#[derive(Clone)]
pub struct Mapping {
    bytes: Arc<dyn AsRef<[u8]> + Send + Sync>,
}

impl Mapping {
    /// Wrap any owner of bytes (a memory map, a buffer).
    pub fn new(bytes: Arc<dyn AsRef<[u8]> + Send + Sync>) -> Self {
        Self { bytes }
    }

    /// A mapping over bytes held in memory.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        Self { bytes: Arc::new(bytes) }
    }
}

impl Deref for Mapping {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        (*self.bytes).as_ref()
    }
}

impl fmt::Debug for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Mapping({} bytes)", self.len())
    }
}
