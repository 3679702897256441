// Linked against the runtime libraries only (see CMakeLists.txt beside this file). It
// references nothing itself; the linker pulls in whatever the runtime's own static
// initializers and public entry points need, which is what the layering test inspects.
int main() { return 0; }
