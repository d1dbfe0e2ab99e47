mod calls;
mod streams;
