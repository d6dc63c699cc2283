/* placeholder */
#include <criterion/criterion.h>
Test(flight, placeholder) {}
