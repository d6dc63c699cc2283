// tests/cxx17.cpp - ringlog.h compiles as C++17 with -Wall -Wextra -Werror
// -pedantic, and its macros work from C++: this program emits one event of
// each kind (RINGLOG_EVENT, _EX and _WAIT) and exits 0.
#include <ringlog.h>

#include <cstdint>
#include <string>

RINGLOG_PROVIDER_DEFINE(cxx_provider, "Test.Cxx");

int main()
{
	std::string s = "from C++";
	ringlog_activity act{};

	RINGLOG_EVENT(cxx_provider, "Hello", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_STR("s", s.c_str()),
		      RINGLOG_U64("n", UINT64_C(42)), RINGLOG_F64("x", 0.5), RINGLOG_BOOL("b", true));
	RINGLOG_EVENT_EX(cxx_provider, RINGLOG_OPCODE_STOP, &act, "Bye", RINGLOG_LEVEL_VERBOSE, 0,
			 RINGLOG_BLOB("raw", s.data(), s.size()));
	RINGLOG_EVENT_WAIT(cxx_provider, 1000, "Waited", RINGLOG_LEVEL_INFO, 0x1,
			   RINGLOG_U32("n", 7u));
	return RINGLOG_ENABLED(cxx_provider, RINGLOG_LEVEL_INFO, 0x1) ? 0 : 1;
}
