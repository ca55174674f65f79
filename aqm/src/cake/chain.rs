//! Intrusive doubly linked lists over flow indices: CAKE moves a flow between its tin's new,
//! old and decaying lists from any position, in O(1).

const NIL: u16 = u16::MAX;

/// Which list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListId {
    New = 0,
    Old = 1,
    Decaying = 2,
}

#[derive(Debug)]
pub struct Chains {
    head: [u16; 3],
    tail: [u16; 3],
    next: Vec<u16>,
    prev: Vec<u16>,
    on: Vec<u8>,
}

impl Chains {
    pub fn new(n: usize) -> Self {
        Self {
            head: [NIL; 3],
            tail: [NIL; 3],
            next: vec![NIL; n],
            prev: vec![NIL; n],
            on: vec![u8::MAX; n],
        }
    }

    pub fn front(&self, l: ListId) -> Option<usize> {
        let h = self.head[l as usize];
        (h != NIL).then_some(usize::from(h))
    }

    pub fn is_empty(&self, l: ListId) -> bool {
        self.head[l as usize] == NIL
    }

    /// Takes `i` off whatever list holds it (no-op if none).
    pub fn remove(&mut self, i: usize) {
        let l = self.on[i];
        if l == u8::MAX {
            return;
        }
        let l = usize::from(l);
        let (p, n) = (self.prev[i], self.next[i]);
        if p == NIL {
            self.head[l] = n;
        } else {
            self.next[usize::from(p)] = n;
        }
        if n == NIL {
            self.tail[l] = p;
        } else {
            self.prev[usize::from(n)] = p;
        }
        self.prev[i] = NIL;
        self.next[i] = NIL;
        self.on[i] = u8::MAX;
    }

    /// Moves `i` to the tail of `l`.
    pub fn push_back(&mut self, l: ListId, i: usize) {
        self.remove(i);
        let li = l as usize;
        let t = self.tail[li];
        self.prev[i] = t;
        self.next[i] = NIL;
        let iu = i as u16;
        if t == NIL {
            self.head[li] = iu;
        } else {
            self.next[usize::from(t)] = iu;
        }
        self.tail[li] = iu;
        self.on[i] = l as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_from_the_middle() {
        let mut c = Chains::new(8);
        for i in 0..4 {
            c.push_back(ListId::Decaying, i);
        }
        c.push_back(ListId::New, 2);
        assert_eq!(c.front(ListId::New), Some(2));
        c.remove(0);
        assert_eq!(c.front(ListId::Decaying), Some(1));
        c.remove(1);
        c.remove(3);
        assert!(c.is_empty(ListId::Decaying));
        c.remove(2);
        assert!(c.is_empty(ListId::New));
    }
}
