// Constant tables shared by the math expansions (ir/transforms/math_*.cpp). Internal to
// ir/transforms/; the IR has no constant arrays, so expansions read these through select
// chains at build time.
#pragma once

#include <cstdint>

namespace tessera::ir::math {

// 2/pi = sum kTwoOverPi24[j] 2^(-24 (j + 1)): its first 1176 bits, enough for the Payne-Hanek
// reduction of every finite double (computed from Machin's formula with big integers).
inline constexpr uint32_t kTwoOverPi24[] = {
    0xa2f983, 0x6e4e44, 0x1529fc, 0x2757d1, 0xf534dd, 0xc0db62, 0x95993c, 0x439041, 0xfe5163,
    0xabdebb, 0xc561b7, 0x246e3a, 0x424dd2, 0xe00649, 0x2eea09, 0xd1921c, 0xfe1deb, 0x1cb129,
    0xa73ee8, 0x8235f5, 0x2ebb44, 0x84e99c, 0x7026b4, 0x5f7e41, 0x3991d6, 0x398353, 0x39f49c,
    0x845f8b, 0xbdf928, 0x3b1ff8, 0x97ffde, 0x05980f, 0xef2f11, 0x8b5a0a, 0x6d1f6d, 0x367ecf,
    0x27cb09, 0xb74f46, 0x3f669e, 0x5fea2d, 0x7527ba, 0xc7ebe5, 0xf17b3d, 0x0739f7, 0x8a5292,
    0xea6bfb, 0x5fb11f, 0x8d5d08, 0x560330};

} // namespace tessera::ir::math
