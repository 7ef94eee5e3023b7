#pragma once
/// PRECDETECT_UNDER_ASAN is defined when AddressSanitizer (with its LeakSanitizer) is compiled in: GCC names it
/// __SANITIZE_ADDRESS__, clang 14 only __has_feature(address_sanitizer).

#if defined(__SANITIZE_ADDRESS__)
#define PRECDETECT_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PRECDETECT_UNDER_ASAN 1
#endif
#endif
