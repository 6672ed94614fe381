//! Sixteen bytes at a time: the few vector operations the reader needs, in one place.
//!
//! Built for wasm32 with SIMD (see `.cargo/config.toml`) they are WebAssembly `v128`
//! instructions, which wasmtime turns into SSE/AVX. Native x86_64 builds (tests, fuzzing,
//! profiling) use the same operations in SSE2, so that a native profile measures the same
//! algorithm; elsewhere a portable version loops over the bytes.

/// Sixteen bytes, or sixteen lanes of a comparison (0xFF where true).
#[derive(Clone, Copy)]
pub struct V16(Inner);

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
type Inner = core::arch::wasm32::v128;

#[cfg(all(
    target_arch = "x86_64",
    not(all(target_arch = "wasm32", target_feature = "simd128"))
))]
type Inner = core::arch::x86_64::__m128i;

#[cfg(not(any(
    target_arch = "x86_64",
    all(target_arch = "wasm32", target_feature = "simd128")
)))]
type Inner = [u8; 16];

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
impl V16 {
    #[inline(always)]
    pub fn load(chunk: &[u8; 16]) -> V16 {
        // SAFETY: `chunk` is 16 readable bytes, and v128_load needs no alignment.
        V16(unsafe { core::arch::wasm32::v128_load(chunk.as_ptr().cast()) })
    }

    /// Lanes equal to `byte`.
    #[inline(always)]
    pub fn eq(self, byte: u8) -> V16 {
        use core::arch::wasm32::{u8x16_eq, u8x16_splat};
        V16(u8x16_eq(self.0, u8x16_splat(byte)))
    }

    /// Lanes below `byte`, both taken as signed: with 0x20, the control characters and
    /// every byte of a multi-byte UTF-8 character.
    #[inline(always)]
    pub fn lt_signed(self, byte: i8) -> V16 {
        use core::arch::wasm32::{i8x16_lt, i8x16_splat};
        V16(i8x16_lt(self.0, i8x16_splat(byte)))
    }

    /// Every lane with the bits of `bits` set.
    #[inline(always)]
    pub fn with_bits(self, bits: u8) -> V16 {
        use core::arch::wasm32::{u8x16_splat, v128_or};
        V16(v128_or(self.0, u8x16_splat(bits)))
    }

    #[inline(always)]
    pub fn or(self, other: V16) -> V16 {
        V16(core::arch::wasm32::v128_or(self.0, other.0))
    }

    /// Bit `i` set where lane `i` is true.
    #[inline(always)]
    pub fn mask(self) -> u16 {
        core::arch::wasm32::u8x16_bitmask(self.0)
    }

    /// Whether any lane is true.
    #[inline(always)]
    pub fn any(self) -> bool {
        core::arch::wasm32::v128_any_true(self.0)
    }
}

#[cfg(all(
    target_arch = "x86_64",
    not(all(target_arch = "wasm32", target_feature = "simd128"))
))]
impl V16 {
    // SAFETY (every block below): SSE2 is part of the x86_64 baseline.

    #[inline(always)]
    pub fn load(chunk: &[u8; 16]) -> V16 {
        use core::arch::x86_64::{__m128i, _mm_loadu_si128};
        // SAFETY: `chunk` is 16 readable bytes, and _mm_loadu_si128 needs no alignment.
        V16(unsafe { _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>()) })
    }

    #[inline(always)]
    pub fn eq(self, byte: u8) -> V16 {
        use core::arch::x86_64::{_mm_cmpeq_epi8, _mm_set1_epi8};
        V16(unsafe { _mm_cmpeq_epi8(self.0, _mm_set1_epi8(byte as i8)) })
    }

    #[inline(always)]
    pub fn lt_signed(self, byte: i8) -> V16 {
        use core::arch::x86_64::{_mm_cmplt_epi8, _mm_set1_epi8};
        V16(unsafe { _mm_cmplt_epi8(self.0, _mm_set1_epi8(byte)) })
    }

    #[inline(always)]
    pub fn with_bits(self, bits: u8) -> V16 {
        use core::arch::x86_64::{_mm_or_si128, _mm_set1_epi8};
        V16(unsafe { _mm_or_si128(self.0, _mm_set1_epi8(bits as i8)) })
    }

    #[inline(always)]
    pub fn or(self, other: V16) -> V16 {
        V16(unsafe { core::arch::x86_64::_mm_or_si128(self.0, other.0) })
    }

    #[inline(always)]
    pub fn mask(self) -> u16 {
        (unsafe { core::arch::x86_64::_mm_movemask_epi8(self.0) }) as u16
    }

    #[inline(always)]
    pub fn any(self) -> bool {
        self.mask() != 0
    }
}

#[cfg(not(any(
    target_arch = "x86_64",
    all(target_arch = "wasm32", target_feature = "simd128")
)))]
impl V16 {
    pub fn load(chunk: &[u8; 16]) -> V16 {
        V16(*chunk)
    }

    fn lanes(self, f: impl Fn(u8) -> bool) -> V16 {
        V16(self.0.map(|b| if f(b) { 0xFF } else { 0 }))
    }

    pub fn eq(self, byte: u8) -> V16 {
        self.lanes(|b| b == byte)
    }

    pub fn lt_signed(self, byte: i8) -> V16 {
        self.lanes(|b| (b as i8) < byte)
    }

    pub fn with_bits(self, bits: u8) -> V16 {
        V16(self.0.map(|b| b | bits))
    }

    pub fn or(self, other: V16) -> V16 {
        let mut out = self.0;
        out.iter_mut().zip(other.0).for_each(|(a, b)| *a |= b);
        V16(out)
    }

    pub fn mask(self) -> u16 {
        (self.0.iter().enumerate()).fold(0, |m, (i, &b)| m | (u16::from(b >> 7) << i))
    }

    pub fn any(self) -> bool {
        self.mask() != 0
    }
}

/// The bytes a string scan stops at: `"`, `\`, control characters and non-ASCII bytes.
#[inline(always)]
pub fn special(chunk: &[u8; 16]) -> u16 {
    let v = V16::load(chunk);
    v.eq(b'"').or(v.eq(b'\\')).or(v.lt_signed(0x20)).mask()
}

/// The bytes a string skim stops at: `"` and `\`.
#[inline(always)]
pub fn quote_or_backslash(chunk: &[u8; 16]) -> u16 {
    let v = V16::load(chunk);
    v.eq(b'"').or(v.eq(b'\\')).mask()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn masks_match_the_bytes(bytes in prop::collection::vec(any::<u8>(), 16)) {
            let chunk: [u8; 16] = bytes.clone().try_into().unwrap();
            let expect = |f: &dyn Fn(u8) -> bool| {
                bytes.iter().enumerate().fold(0u16, |m, (i, &b)| m | (u16::from(f(b)) << i))
            };
            prop_assert_eq!(special(&chunk), expect(&|b| b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b)));
            prop_assert_eq!(quote_or_backslash(&chunk), expect(&|b| b == b'"' || b == b'\\'));
            let folded = V16::load(&chunk).with_bits(0x20);
            prop_assert_eq!(folded.eq(b'{').mask(), expect(&|b| b == b'{' || b == b'['));
            prop_assert_eq!(folded.eq(b'}').mask(), expect(&|b| b == b'}' || b == b']'));
        }
    }
}
