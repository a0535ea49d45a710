// Catch2 v2 entry point (one per test binary).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
