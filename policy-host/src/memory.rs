//! Guest linear memory that reports its size.
//!
//! `wasmtime-provider` keeps its store private, so the host cannot ask an instance how large
//! its memory has grown. Instead the engine is given this `MemoryCreator`: it reserves and
//! guards memory exactly as wasmtime's default does (so the compiled code and its bounds
//! checks are unchanged), and records every growth in a shared counter.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use wasmtime::{LinearMemory, MemoryCreator, MemoryType};

/// The size in bytes of the most recently created or grown linear memory.
#[derive(Clone, Default)]
pub struct MemoryGauge(Arc<AtomicUsize>);

impl MemoryGauge {
    pub fn bytes(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

pub struct GaugedMemoryCreator(pub MemoryGauge);

unsafe impl MemoryCreator for GaugedMemoryCreator {
    fn new_memory(
        &self,
        _ty: MemoryType,
        minimum: usize,
        maximum: Option<usize>,
        reserved_size_in_bytes: Option<usize>,
        guard_size_in_bytes: usize,
    ) -> Result<Box<dyn LinearMemory>, String> {
        // Without a reservation the memory may move; we always reserve the most it can grow to.
        let reserved = reserved_size_in_bytes
            .or(maximum)
            .unwrap_or(4 << 30)
            .max(minimum);
        let mapping_len = reserved + guard_size_in_bytes;
        // SAFETY: an anonymous private mapping with no access; pages become accessible only
        // through `protect` below, within the mapping.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapping_len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(format!(
                "cannot reserve {mapping_len} bytes for guest memory"
            ));
        }
        let mut memory = GaugedMemory {
            base: base.cast(),
            size: 0,
            reserved,
            mapping_len,
            maximum,
            gauge: self.0.clone(),
        };
        memory.grow_to(minimum).map_err(|e| e.to_string())?;
        Ok(Box::new(memory))
    }
}

struct GaugedMemory {
    base: *mut u8,
    size: usize,
    reserved: usize,
    mapping_len: usize,
    maximum: Option<usize>,
    gauge: MemoryGauge,
}

// SAFETY: the mapping is owned by this value and only reached through it.
unsafe impl Send for GaugedMemory {}
unsafe impl Sync for GaugedMemory {}

unsafe impl LinearMemory for GaugedMemory {
    fn byte_size(&self) -> usize {
        self.size
    }

    fn byte_capacity(&self) -> usize {
        self.maximum.unwrap_or(self.reserved).min(self.reserved)
    }

    fn grow_to(&mut self, new_size: usize) -> wasmtime::Result<()> {
        if new_size > self.byte_capacity() {
            wasmtime::bail!("guest memory cannot grow to {new_size} bytes");
        }
        if new_size > self.size {
            // SAFETY: [base, base + new_size) lies within the reservation.
            let rc = unsafe {
                libc::mprotect(
                    self.base.cast(),
                    new_size,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
            if rc != 0 {
                wasmtime::bail!("cannot make {new_size} bytes of guest memory accessible");
            }
            self.size = new_size;
        }
        self.gauge.0.store(self.size, Ordering::Relaxed);
        Ok(())
    }

    fn as_ptr(&self) -> *mut u8 {
        self.base
    }
}

impl Drop for GaugedMemory {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new_memory`.
        unsafe {
            libc::munmap(self.base.cast(), self.mapping_len);
        }
    }
}
