// The Catch2 test runner for every unit test file in this folder.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
